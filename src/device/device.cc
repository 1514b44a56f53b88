// Device: capacity-checked allocation, usage accounting, the
// out-of-memory message, and the tensor copy helpers (see device.h).
#include "device/device.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "device/cpu/cpu_device.h"
#include "device/cpu/threads.h"
#include "device/ops.h"

namespace zerotrain::device {

std::string_view category_name(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::kParameters:
      return "parameters";
    case MemoryCategory::kGradients:
      return "gradients";
    case MemoryCategory::kMasterWeights:
      return "master weights";
    case MemoryCategory::kOptimizerStates:
      return "optimizer states";
    case MemoryCategory::kActivations:
      return "activations";
    case MemoryCategory::kBuffers:
      return "buffers";
    case MemoryCategory::kOther:
      break;
  }
  return "other";
}

std::string format_bytes(int64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes < 1024)
    std::snprintf(buf, sizeof(buf), "%lld B", static_cast<long long>(bytes));
  else if (bytes < (int64_t{1} << 20))
    std::snprintf(buf, sizeof(buf), "%.1f KiB", b / 1024);
  else if (bytes < (int64_t{1} << 30))
    std::snprintf(buf, sizeof(buf), "%.1f MiB", b / (1 << 20));
  else
    std::snprintf(buf, sizeof(buf), "%.2f GiB", b / (1 << 30));
  return buf;
}

int64_t MemoryUsage::total() const {
  int64_t t = 0;
  for (int64_t b : bytes) t += b;
  return t;
}

std::string MemoryUsage::to_string() const {
  std::string out;
  for (int i = 0; i < kMemoryCategories; ++i) {
    if (bytes[i] == 0) continue;
    if (!out.empty()) out += ", ";
    out +=
        std::string(category_name(static_cast<MemoryCategory>(i))) + " " + format_bytes(bytes[i]);
  }
  return out.empty() ? "nothing" : out;
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    device_ = std::exchange(o.device_, nullptr);
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    category_ = o.category_;
    host_ = std::exchange(o.host_, false);
    pinned_ = std::exchange(o.pinned_, false);
  }
  return *this;
}

void Buffer::reset() {
  if (device_ != nullptr && data_ != nullptr) device_->release(*this);
  device_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
  host_ = pinned_ = false;
}

Tensor Buffer::tensor(DType dtype) const {
  return Tensor{data_, dtype, bytes_ / dtype_size(dtype), host_ ? nullptr : device_};
}

Tensor Buffer::tensor(DType dtype, size_t offset, size_t count) const {
  return tensor(dtype).slice(offset, count);
}

StatusOr<Buffer> Device::allocate(size_t bytes, MemoryCategory category, std::string_view what) {
  Buffer b;
  if (bytes == 0) return b;
  const auto c = static_cast<int>(category);
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t cap = capacity_.load();
    if (cap > 0 && usage_.total() + static_cast<int64_t>(bytes) > cap)
      return resource_exhausted(out_of_memory(bytes, category, what));
    usage_.bytes[c] += static_cast<int64_t>(bytes);
    usage_.peak = std::max(usage_.peak, usage_.total());
  }
  void* p = raw_allocate(bytes);
  if (p == nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    usage_.bytes[c] -= static_cast<int64_t>(bytes);
    return Status(StatusCode::kResourceExhausted,
                  "out of memory on " + name() + ": the system refused " +
                      format_bytes(static_cast<int64_t>(bytes)) + " for " + std::string(what) +
                      " (" + std::string(category_name(category)) + ")");
  }
  b.device_ = this;
  b.data_ = p;
  b.bytes_ = bytes;
  b.category_ = category;
  return b;
}

StatusOr<Buffer> Device::allocate_host(size_t bytes, bool pin, MemoryCategory category,
                                       std::string_view what) {
  Buffer b;
  if (bytes == 0) return b;
  bool pinned = false;
  void* p = raw_allocate_host(bytes, pin, &pinned);
  if (p == nullptr)
    return Status(StatusCode::kResourceExhausted, "out of host memory allocating " +
                                                      format_bytes(static_cast<int64_t>(bytes)) +
                                                      " for " + std::string(what) + " (offloaded " +
                                                      std::string(category_name(category)) + ")");
  if (pinned) pinned_ += static_cast<int64_t>(bytes);
  b.device_ = this;
  b.data_ = p;
  b.bytes_ = bytes;
  b.category_ = category;
  b.host_ = true;
  b.pinned_ = pinned;
  return b;
}

void Device::release(Buffer& b) {
  if (b.host_) {
    if (b.pinned_) pinned_ -= static_cast<int64_t>(b.bytes_);
    raw_free_host(b.data_, b.bytes_, b.pinned_);
    return;
  }
  raw_free(b.data_, b.bytes_);
  std::lock_guard<std::mutex> lock(mu_);
  usage_.bytes[static_cast<int>(b.category_)] -= static_cast<int64_t>(b.bytes_);
}

MemoryUsage Device::usage() const {
  std::lock_guard<std::mutex> lock(mu_);
  return usage_;
}

void Device::set_oom_advice(std::function<std::string()> advice) {
  std::lock_guard<std::mutex> lock(mu_);
  advice_ = std::move(advice);
}

// Called with mu_ held.
std::string Device::out_of_memory(size_t bytes, MemoryCategory category,
                                  std::string_view what) const {
  const std::string_view cat = category_name(category);
  std::string m =
      "out of device memory on " + name() + ": allocating " +
      format_bytes(static_cast<int64_t>(bytes)) + " for " + std::string(what) +
      (what == cat ? "" : " (" + std::string(cat) + ")") + " would bring its use to " +
      format_bytes(usage_.total() + static_cast<int64_t>(bytes)) + ", over the " +
      format_bytes(capacity_.load()) +
      " capacity (--device-memory / ZEROTRAIN_DEVICE_MEMORY); in use: " + usage_.to_string();
  if (advice_) m += ". " + advice_();
  return m;
}

int configure_host_threads(int local_ranks, int world_size) {
  return cpu::configure_compute_threads(local_ranks > 0 ? local_ranks
                                                        : cpu::local_ranks_from_env(world_size));
}

const Ops& host_ops() { return cpu::host_ops(); }

const Ops& ops_for(const ConstTensor& t) {
  return t.device != nullptr ? t.device->ops() : cpu::host_ops();
}

Status copy_to_host(const ConstTensor& src, void* host_dst) {
  if (src.numel == 0) return ok_status();
  if (src.device == nullptr) {
    std::memmove(host_dst, src.data, src.size_bytes());
    return ok_status();
  }
  return src.device->copy(host_dst, src.data, src.size_bytes());
}

Status copy_from_host(const void* host_src, const Tensor& dst) {
  if (dst.numel == 0) return ok_status();
  if (dst.device == nullptr) {
    std::memmove(dst.data, host_src, dst.size_bytes());
    return ok_status();
  }
  return dst.device->copy(dst.data, host_src, dst.size_bytes());
}

Status copy(const ConstTensor& src, const Tensor& dst) {
  if (src.dtype != dst.dtype || src.numel != dst.numel)
    return invalid_argument("device::copy: " + std::to_string(src.numel) + " " +
                            std::string(dtype_name(src.dtype)) + " into " +
                            std::to_string(dst.numel) + " " + std::string(dtype_name(dst.dtype)));
  if (src.numel == 0) return ok_status();
  if (dst.device != nullptr) return dst.device->copy(dst.data, src.data, src.size_bytes());
  if (src.device != nullptr) return src.device->copy(dst.data, src.data, src.size_bytes());
  std::memmove(dst.data, src.data, src.size_bytes());
  return ok_status();
}

StatusOr<int64_t> parse_bytes(std::string_view text) {
  const std::string t(text);
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(t, &used);
  } catch (...) {
    used = 0;
  }
  std::string unit = t.substr(used);
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.front()))) unit.erase(0, 1);
  double scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K" || unit == "KiB")
    scale = 1024.0;
  else if (unit == "M" || unit == "MiB")
    scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GiB")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "KB")
    scale = 1e3;
  else if (unit == "MB")
    scale = 1e6;
  else if (unit == "GB")
    scale = 1e9;
  if (used == 0 || scale == 0 || !std::isfinite(value) || value < 0)
    return invalid_argument("\"" + t +
                            "\" is not a byte count (a number with an optional unit: B, "
                            "KiB/MiB/GiB or K/M/G, KB/MB/GB)");
  return static_cast<int64_t>(std::llround(value * scale));
}

}  // namespace zerotrain::device
