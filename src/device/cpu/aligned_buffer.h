// AlignedBuffer<T>: a move-only, 64-byte aligned, zero-initialised heap array
// of a trivially copyable T (float, Half, BFloat16, bytes). 64 bytes is one
// cache line and one AVX-512 register, so SIMD loads of element 0 are aligned
// and two buffers never share a line (no false sharing across threads).
// Buffers of kMappedBytes or more are anonymous mappings of their own
// (zero pages, faulted in on first touch, in transparent huge pages where
// the system allows them) and go back to the kernel when
// released: the transient buffers ZeRO allocates per step (the boundary's
// fp32 gradient view) then never strand heap memory in malloc's arenas,
// which glibc's adaptive mmap threshold would otherwise do after the first
// free, growing the RSS step after step.
//
//   AlignedBuffer<float> master(n);                    // aborts on OOM
//   ZT_ASSIGN_OR_RETURN(auto big, AlignedBuffer<float>::allocate(n));
//   std::span<float> s = master.span();
//
// Thread-safety: like std::vector; distinct buffers are independent.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstring>
#include <new>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "core/status.h"

namespace zerotrain::device::cpu {

inline constexpr size_t kBufferAlignment = 64;
#if defined(__SANITIZE_ADDRESS__)
// AddressSanitizer guards heap blocks only: keep every buffer on the heap.
inline constexpr size_t kMappedBytes = ~size_t{0};
#else
inline constexpr size_t kMappedBytes = size_t{1} << 20;
#endif

// The allocation behind AlignedBuffer (and the CPU device's memory):
// `bytes` rounded up to whole 64-byte lines (SIMD tails may touch the last
// one), zeroed; null when the system refuses. Release with the same size.
inline size_t aligned_bytes(size_t bytes) {
  return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}
inline void* allocate_zeroed(size_t bytes) {
  const size_t rounded = aligned_bytes(bytes);
  if (rounded >= kMappedBytes) {
    void* p = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;  // zero pages already
    // Transparent huge pages where the system leaves them to madvise (Debian's
    // default): a step's fresh 0.5 GB buffer then takes 2 MiB faults, not
    // 4 KiB ones, which cost a 135M-parameter bf16 step 0.6 s. Advice only:
    // refused (THP off), it changes nothing.
    (void)::madvise(p, rounded, MADV_HUGEPAGE);
    return p;
  }
  void* p = ::operator new (rounded, std::align_val_t{kBufferAlignment}, std::nothrow);
  if (p != nullptr) std::memset(p, 0, rounded);
  return p;
}
inline void free_zeroed(void* p, size_t bytes) {
  const size_t rounded = aligned_bytes(bytes);
  if (rounded >= kMappedBytes)
    ::munmap(p, rounded);
  else
    ::operator delete (p, std::align_val_t{kBufferAlignment});
}

template <typename T>
class AlignedBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "AlignedBuffer holds plain data");

 public:
  AlignedBuffer() = default;
  // n zeroed elements; aborts with a message if the allocation fails.
  explicit AlignedBuffer(size_t n) {
    ZT_CHECK(reserve_zeroed(n), "out of memory allocating ", n * sizeof(T), " bytes");
  }
  // n zeroed elements, or an Internal status naming the byte count.
  static StatusOr<AlignedBuffer> allocate(size_t n) {
    AlignedBuffer buffer;
    if (!buffer.reserve_zeroed(n)) {
      return internal_error("out of memory allocating " + std::to_string(n * sizeof(T)) +
                            " bytes (AlignedBuffer)");
    }
    return buffer;
  }

  AlignedBuffer(AlignedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { release(); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  size_t size_bytes() const { return size_ * sizeof(T); }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  std::span<T> span() { return {data_, size_}; }
  std::span<const T> span() const { return {data_, size_}; }

 private:
  bool reserve_zeroed(size_t n) {
    if (n == 0) return true;
    if (n > (~size_t{0} - kBufferAlignment) / sizeof(T)) return false;
    void* p = allocate_zeroed(n * sizeof(T));
    if (p == nullptr) return false;
    data_ = static_cast<T*>(p);
    size_ = n;
    return true;
  }
  void release() {
    if (data_ != nullptr) free_zeroed(data_, size_ * sizeof(T));
    data_ = nullptr;
    size_ = 0;
  }

  T* data_ = nullptr;  // [size_], 64-byte aligned
  size_t size_ = 0;
};

}  // namespace zerotrain::device::cpu
