// TensorBoard event files (see event_file.h).
#include "train/event_file.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "core/crc32c.h"
#include "train/tensorboard_event.pb.h"

namespace zerotrain::train {
namespace {

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

}  // namespace

uint32_t masked_crc32c(const void* data, size_t bytes) {
  const uint32_t c = crc32c(data, bytes);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

std::string tfrecord_frame(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 16);
  put_le(out, payload.size(), 8);
  put_le(out, masked_crc32c(out.data(), 8), 4);
  out.append(payload);
  put_le(out, masked_crc32c(payload.data(), payload.size()), 4);
  return out;
}

StatusOr<std::unique_ptr<EventFile>> EventFile::create(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return io_error("tensorboard: cannot create " + dir + ": " + ec.message());
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "localhost");
  const double now = unix_seconds();
  char name[64];
  std::snprintf(name, sizeof(name), "events.out.tfevents.%010lld.", static_cast<long long>(now));
  // The last field counts the files this process opened, as SummaryWriter's
  // does, so two writers in one second get two files.
  static std::atomic<int> opened{0};
  const std::string path =
      (std::filesystem::path(dir) /
       (name + std::string(host) + "." + std::to_string(getpid()) + "." + std::to_string(opened++)))
          .string();
  // "x": never append to (or truncate) another writer's file.
  std::FILE* f = std::fopen(path.c_str(), "wbx");
  if (f == nullptr)
    return io_error("tensorboard: cannot create " + path + ": " + std::strerror(errno));
  std::unique_ptr<EventFile> file(new EventFile(f, path));
  tensorboard::Event first;
  first.set_wall_time(now);
  first.set_file_version("brain.Event:2");
  ZT_RETURN_IF_ERROR(file->append(first.SerializeAsString()));
  ZT_RETURN_IF_ERROR(file->flush());
  return file;
}

EventFile::~EventFile() { std::fclose(f_); }

Status EventFile::add_scalar(const std::string& tag, double value, int64_t step) {
  tensorboard::Event e;
  e.set_wall_time(unix_seconds());
  e.set_step(step);
  tensorboard::Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  return append(e.SerializeAsString());
}

Status EventFile::append(const std::string& event_bytes) {
  const std::string record = tfrecord_frame(event_bytes);
  if (std::fwrite(record.data(), 1, record.size(), f_) != record.size())
    return io_error("tensorboard: cannot write " + path_ + ": " + std::strerror(errno));
  return ok_status();
}

Status EventFile::flush() {
  if (std::fflush(f_) != 0)
    return io_error("tensorboard: cannot write " + path_ + ": " + std::strerror(errno));
  return ok_status();
}

}  // namespace zerotrain::train
