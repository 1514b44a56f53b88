// CpuDevice: RAM through the aligned allocator, host memory through
// host_memory (mmap + mlock), synchronous copies (see cpu_device.h).
#include "device/cpu/cpu_device.h"

#include <cstring>
#include <string>

#include "core/env.h"
#include "device/cpu/aligned_buffer.h"
#include "device/cpu/cpu_ops.h"
#include "device/cpu/host_buffer.h"

namespace zerotrain::device::cpu {
namespace {

class DoneEvent : public Event {
 public:
  Status synchronize() override { return ok_status(); }
  bool completed() const override { return true; }
};

const CpuOps& the_ops() {
  static const CpuOps ops;
  return ops;
}

}  // namespace

const Ops& CpuDevice::ops() const { return the_ops(); }
const Ops& host_ops() { return the_ops(); }

Status CpuDevice::copy(void* dst, const void* src, size_t bytes) {
  if (bytes > 0 && dst != src) std::memmove(dst, src, bytes);
  return ok_status();
}

Status CpuDevice::fill_zero(void* dst, size_t bytes) {
  if (bytes > 0) std::memset(dst, 0, bytes);
  return ok_status();
}

StatusOr<std::unique_ptr<Event>> CpuDevice::record_event() {
  return std::unique_ptr<Event>(new DoneEvent());
}

void* CpuDevice::raw_allocate(size_t bytes) { return allocate_zeroed(bytes); }
void CpuDevice::raw_free(void* p, size_t bytes) { free_zeroed(p, bytes); }

void* CpuDevice::raw_allocate_host(size_t bytes, bool pin, bool* pinned) {
  return host_memory::allocate(bytes, pin, pinned);
}

void CpuDevice::raw_free_host(void* p, size_t bytes, bool pinned) {
  host_memory::release(p, bytes, pinned);
}

Device& cpu_device() {
  static CpuDevice* device = [] {
    auto* d = new CpuDevice();  // never destroyed: buffers may outlive static destruction
    if (std::optional<std::string> v = env::get("ZEROTRAIN_DEVICE_MEMORY")) {
      StatusOr<int64_t> cap = device::parse_bytes(*v);
      ZT_CHECK(cap.ok(), "ZEROTRAIN_DEVICE_MEMORY: ", cap.status().message());
      d->set_capacity(*cap);
    }
    return d;
  }();
  return *device;
}

}  // namespace zerotrain::device::cpu
