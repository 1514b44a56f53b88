// BufferPool: reusable device buffers for ZeRO's transient memory
// (gathered group parameters, full group gradients, the collectives'
// staging, the 16-bit stages' fp32 expansions). A released buffer waits in
// the pool for the next request of the same size (a stage asks for a
// handful of sizes: one per kind of group), so steady-state training
// allocates nothing; bytes() is everything the pool holds, in use or idle
// — the "buffers" line of the memory report, which never exceeds the
// high-water mark of use.
//
//   BufferPool pool(&device);
//   ZT_ASSIGN_OR_RETURN(device::Buffer b, pool.acquire(n * sizeof(float)));
//   float* full = b.as<float>();   ... pool.release(std::move(b));
//
// Thread-safety: one owner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/status.h"
#include "device/device.h"

namespace zerotrain::zero {

class BufferPool {
 public:
  BufferPool() = default;
  explicit BufferPool(device::Device* device) : device_(device) {}
  // A buffer of exactly `bytes` (contents unspecified: a reused one keeps
  // old data; a new one is zeroed); ResourceExhausted when the device has
  // no room.
  StatusOr<device::Buffer> acquire(size_t bytes) {
    for (size_t i = 0; i < idle_.size(); ++i) {
      if (idle_[i].bytes() == bytes) {
        device::Buffer b = std::move(idle_[i]);
        idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(i));
        return b;
      }
    }
    ZT_ASSIGN_OR_RETURN(device::Buffer b,
                        device_->allocate(bytes, device::MemoryCategory::kBuffers, "ZeRO buffers"));
    held_ += static_cast<int64_t>(bytes);
    return b;
  }
  void release(device::Buffer b) {
    if (!b.empty()) idle_.push_back(std::move(b));
  }
  int64_t bytes() const { return held_; }

 private:
  device::Device* device_ = nullptr;
  std::vector<device::Buffer> idle_;
  int64_t held_ = 0;
};

}  // namespace zerotrain::zero
