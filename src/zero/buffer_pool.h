// BufferPool: reusable 64-byte aligned byte buffers for stage 3's
// transient memory (gathered group parameters, full group gradients, the
// collectives' staging). A released buffer waits in the pool for the next
// request of the same size (stage 3 asks for a handful of sizes: one per
// kind of group), so steady-state training allocates nothing; bytes() is
// everything the pool holds, in use or idle — the "buffers" line of the
// memory report, which never exceeds the high-water mark of use.
//
//   ZT_ASSIGN_OR_RETURN(BufferPool::Buffer b, pool.acquire(n * sizeof(float)));
//   float* full = reinterpret_cast<float*>(b.data());   ... pool.release(std::move(b));
//
// Thread-safety: one owner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/status.h"
#include "device/cpu/aligned_buffer.h"

namespace zerotrain::zero {

class BufferPool {
 public:
  using Buffer = device::cpu::AlignedBuffer<std::byte>;

  // A buffer of exactly `bytes` (contents unspecified: a reused one keeps
  // old data; a new one is zeroed); Internal when memory is exhausted.
  StatusOr<Buffer> acquire(size_t bytes) {
    for (size_t i = 0; i < idle_.size(); ++i) {
      if (idle_[i].size() == bytes) {
        Buffer b = std::move(idle_[i]);
        idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(i));
        return b;
      }
    }
    ZT_ASSIGN_OR_RETURN(Buffer b, Buffer::allocate(bytes));
    held_ += static_cast<int64_t>(bytes);
    return b;
  }
  void release(Buffer b) {
    if (!b.empty()) idle_.push_back(std::move(b));
  }
  int64_t bytes() const { return held_; }

 private:
  std::vector<Buffer> idle_;
  int64_t held_ = 0;
};

}  // namespace zerotrain::zero
