// HostBuffer<T>: host memory for offloaded model states (offload_optimizer,
// offload_param): a move-only, zeroed, page-aligned array of plain data,
// optionally pinned (page-locked with mlock, DeepSpeed's pin_memory), so a
// GPU build can copy to and from it without a staging bounce and the
// kernel never swaps optimizer states out. Pinning is best effort: when
// mlock is refused (RLIMIT_MEMLOCK, no CAP_IPC_LOCK) the process logs ONE
// warning naming the size and the limit and the buffer stays pageable —
// training goes on exactly the same, only slower to transfer.
//
//   ZT_ASSIGN_OR_RETURN(auto m, HostBuffer<float>::allocate(n, /*pin=*/true));
//   std::span<float> master = m.span();
//   bytes.optimizer_states += m.size_bytes();      // what accounting reports
//
// size_bytes() is n * sizeof(T), the state's own size (accounting adds it
// up to the ZeRO formulas); reserved_bytes() is what was mapped (whole
// pages). Thread-safety: like std::vector; the pinned-bytes counter and the
// one-time warning are process-wide and atomic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>

#include "core/status.h"

namespace zerotrain::device::cpu {

namespace host_memory {
inline constexpr size_t kPageBytes = 4096;
// bytes rounded up to whole pages; 0 for 0, SIZE_MAX if it would overflow.
size_t page_round(size_t bytes);
// Zeroed, page-aligned memory of page_round(bytes) bytes, or null. When pin
// is set, tries mlock; *pinned says whether it held (a refusal is warned
// about once per process and otherwise ignored).
void* allocate(size_t bytes, bool pin, bool* pinned);
void release(void* p, size_t bytes, bool pinned);
// Bytes this process holds pinned through HostBuffers right now.
int64_t pinned_bytes();
// The one-time pinning warning has been logged in this process.
bool pin_warning_logged();
}  // namespace host_memory

template <typename T>
class HostBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "HostBuffer holds plain data");

 public:
  HostBuffer() = default;
  // n zeroed elements (pinned if asked and allowed), or Internal naming the
  // byte count when the memory is not there.
  static StatusOr<HostBuffer> allocate(size_t n, bool pin) {
    HostBuffer b;
    if (n == 0) return b;
    if (n > SIZE_MAX / sizeof(T) - host_memory::kPageBytes)
      return internal_error("HostBuffer: " + std::to_string(n) + " elements overflow size_t");
    void* p = host_memory::allocate(n * sizeof(T), pin, &b.pinned_);
    if (p == nullptr)
      return internal_error("out of host memory allocating " + std::to_string(n * sizeof(T)) +
                            " bytes (HostBuffer for offloaded states)");
    b.data_ = static_cast<T*>(p);
    b.size_ = n;
    return b;
  }

  HostBuffer(HostBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        pinned_(std::exchange(o.pinned_, false)) {}
  HostBuffer& operator=(HostBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      pinned_ = std::exchange(o.pinned_, false);
    }
    return *this;
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() { reset(); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool pinned() const { return pinned_; }
  int64_t size_bytes() const { return static_cast<int64_t>(size_ * sizeof(T)); }
  int64_t reserved_bytes() const {
    return static_cast<int64_t>(host_memory::page_round(size_ * sizeof(T)));
  }
  std::span<T> span() { return {data_, size_}; }
  std::span<const T> span() const { return {data_, size_}; }

 private:
  void reset() {
    if (data_ != nullptr) host_memory::release(data_, size_ * sizeof(T), pinned_);
    data_ = nullptr;
    size_ = 0;
    pinned_ = false;
  }

  T* data_ = nullptr;  // [size_], page-aligned
  size_t size_ = 0;
  bool pinned_ = false;
};

}  // namespace zerotrain::device::cpu
