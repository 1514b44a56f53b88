// A TensorBoard event file, as PyTorch's SummaryWriter writes one: TFRecord
// framing (per record: u64 length, masked CRC32C of the length, the bytes,
// masked CRC32C of the bytes; little endian) around Event protos, the first
// carrying file_version "brain.Event:2", then one Event per scalar with its
// tag, step and float value. Written with Debian's protobuf (lite runtime).
//
//   ZT_ASSIGN_OR_RETURN(auto f, EventFile::create("runs/job"));
//   ZT_RETURN_IF_ERROR(f->add_scalar("Train/Samples/lr", 1e-4, 256));
//   ZT_RETURN_IF_ERROR(f->flush());  // readers see every record so far
//
// Thread-safety: one owner.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace zerotrain::train {

// TFRecord's CRC mask: rotate right by 15, add a constant, so a CRC over
// data that itself holds CRCs stays well distributed.
uint32_t masked_crc32c(const void* data, size_t bytes);

// One framed record: the bytes TFRecord stores for `payload`.
std::string tfrecord_frame(std::string_view payload);

class EventFile {
 public:
  // Creates DIR (and parents) and a new file in it named as SummaryWriter
  // names it: events.out.tfevents.<10-digit unix seconds>.<host>.<pid>.<n>,
  // n counting the event files this process opened (0 first).
  static StatusOr<std::unique_ptr<EventFile>> create(const std::string& dir);
  ~EventFile();
  EventFile(const EventFile&) = delete;
  EventFile& operator=(const EventFile&) = delete;

  // One scalar: TensorBoard stores it as float (simple_value).
  Status add_scalar(const std::string& tag, double value, int64_t step);
  Status flush();
  const std::string& path() const { return path_; }

 private:
  EventFile(std::FILE* f, std::string path) : f_(f), path_(std::move(path)) {}
  Status append(const std::string& event_bytes);

  std::FILE* f_;
  std::string path_;
};

}  // namespace zerotrain::train
