// Safetensors (Hugging Face's tensor file format): a streaming writer and a
// validating reader, both converting to and from fp32.
//
// Layout: u64 little-endian N, then N bytes of UTF-8 JSON
//   {"NAME": {"dtype": "F32"|"F16"|"BF16", "shape": [..], "data_offsets": [b, e]},
//    ..., "__metadata__": {string: string}}   (metadata optional)
// padded with spaces so 8 + N is a multiple of 8, then the data buffer.
// Offsets are bytes relative to the data buffer; tensors are contiguous,
// row-major, little-endian.
//
//   ZT_ASSIGN_OR_RETURN(SafetensorsWriter w, SafetensorsWriter::create(path,
//       {{.name = "w", .dtype = DType::kBFloat16, .shape = {4, 8}}}));
//   ZT_RETURN_IF_ERROR(w.write(first_16_floats));   // chunks, in order
//   ZT_RETURN_IF_ERROR(w.write(last_16_floats));
//   ZT_RETURN_IF_ERROR(w.finish());                 // path appears here
//
//   ZT_ASSIGN_OR_RETURN(SafetensorsFile f, SafetensorsFile::open(path));
//   const SafetensorsTensor* t = f.find("w");
//   ZT_RETURN_IF_ERROR(f.read_f32(*t, 0, t->numel(), out));
//
// Thread-safety: a writer has one owner. A SafetensorsFile is immutable after
// open(); read_f32 uses pread and may be called from several threads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/atomic_file.h"
#include "core/dtype.h"
#include "core/status.h"

namespace zerotrain::checkpoint {

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;  // row-major; [] is a scalar
  int64_t begin = 0, end = 0;  // byte offsets in the data buffer
  int64_t numel() const;       // product of shape (1 for a scalar)
};

// "F32", "F16", "BF16": the safetensors spelling of a dtype.
std::string_view safetensors_dtype_name(DType dtype);

class SafetensorsWriter {
 public:
  // Writes the header now through an AtomicFile (PATH.tmp.PID until
  // finish()). `tensors` give name, dtype and shape; offsets are computed
  // here, in the given order. InvalidArgument for an empty, duplicate or
  // "__metadata__" name or a negative dimension.
  static StatusOr<SafetensorsWriter> create(
      const std::string& path, std::vector<SafetensorsTensor> tensors,
      const std::map<std::string, std::string>& metadata = {});

  SafetensorsWriter(SafetensorsWriter&&) noexcept = default;
  SafetensorsWriter& operator=(SafetensorsWriter&&) noexcept = default;

  // Appends the next values, converted (round to nearest even) to the
  // dtype of the tensor they belong to. Chunks may have any length and may
  // run on into the next tensor; InvalidArgument past the last element.
  Status write(std::span<const float> values);

  // Checks every tensor got exactly its element count, then commits: the
  // file appears at its path whole. A short tensor is InvalidArgument naming
  // it and its counts; then, as after any failed write, the temporary file
  // is removed and the writer is spent.
  Status finish();

  // Destroyed without finish(), nothing appears at the path (AtomicFile).

  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }

 private:
  SafetensorsWriter(AtomicFile file, std::vector<SafetensorsTensor> tensors)
      : file_(std::move(file)), tensors_(std::move(tensors)) {}
  Status write_converted(const SafetensorsTensor& t, std::span<const float> values);
  Status fail(Status status);  // drops the temporary file, returns status
  void skip_empty_tensors();    // moves current_ past full (and empty) tensors

  std::optional<AtomicFile> file_;  // empty once committed or failed
  std::vector<SafetensorsTensor> tensors_;
  size_t current_ = 0;          // index of the tensor being written
  int64_t current_filled_ = 0;  // its elements written so far
};

class SafetensorsFile {
 public:
  // Opens and validates the whole header against the file size; refuses
  // with a Status naming the path and the reason: NotFound / IoError from
  // the OS, Corruption for a truncated file, a header length beyond the
  // file, bad JSON, offsets that overlap, leave gaps or run out of bounds,
  // a byte size not equal to dtype size * numel, or a data buffer not ending
  // at the end of the file; InvalidArgument naming the tensor for a dtype
  // other than F32/F16/BF16.
  static StatusOr<SafetensorsFile> open(const std::string& path);

  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  const std::string& path() const { return path_; }
  // In data order (ascending offsets).
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  // nullptr if there is no tensor of that name.
  const SafetensorsTensor* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // Elements [first, first + count) of `t` (one of tensors()) as fp32 into
  // out[0, count). InvalidArgument for a range outside the tensor; IoError
  // or Corruption if the file changed under us.
  Status read_f32(const SafetensorsTensor& t, int64_t first, int64_t count, float* out) const;

 private:
  SafetensorsFile() = default;
  Status pread_all(void* dst, int64_t size, int64_t file_offset) const;

  std::string path_;
  int fd_ = -1;
  int64_t data_start_ = 0;  // 8 + header length
  int64_t data_size_ = 0;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace zerotrain::checkpoint
