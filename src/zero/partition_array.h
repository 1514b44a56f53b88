// PartitionArray: one of stage 3's per-rank arrays (parameter partition,
// gradient partition) in a storage dtype — fp32, or bf16/fp16 so the
// 16-bit compute copy takes 2 bytes an element — in compute memory or, when
// offloaded, in a (pinned, best effort) HostBuffer. Reads and writes
// convert from and to fp32 (round to nearest even), so callers work in
// fp32 whatever the storage.
//
//   ZT_ASSIGN_OR_RETURN(auto p, PartitionArray::allocate(DType::kBFloat16, n,
//                                                        /*host=*/true, /*pin=*/true));
//   p.write(0, master);          // p = bf16(master)
//   p.add(0, reduced_chunk);     // p = bf16(p + chunk)
//   p.read(0, n, out.data());    // fp32 values
//
// Thread-safety: like a buffer; one writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/status.h"
#include "config/config.h"
#include "device/cpu/aligned_buffer.h"
#include "core/dtype.h"
#include "device/cpu/host_buffer.h"

namespace zerotrain::zero {

class PartitionArray {
 public:
  PartitionArray() = default;
  // n zeroed elements of dtype; on the host (pinned if pin) or in compute
  // memory. Internal naming the bytes when the memory is not there.
  static StatusOr<PartitionArray> allocate(DType dtype, size_t n, bool host, bool pin);

  DType dtype() const { return dtype_; }
  size_t size() const { return size_; }
  bool on_host() const { return on_host_; }
  int64_t size_bytes() const { return static_cast<int64_t>(size_ * dtype_size(dtype_)); }
  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  // Element i's address (in the storage dtype).
  std::byte* at(size_t i) { return data_ + i * dtype_size(dtype_); }
  const std::byte* at(size_t i) const { return data_ + i * dtype_size(dtype_); }
  // The elements as fp32: only for dtype fp32 (checked).
  std::span<float> f32();

  // out[0, n) = float(this[off, off + n)).
  void read(size_t off, size_t n, float* out) const;
  // this[off, off + in.size()) = dtype(in).
  void write(size_t off, std::span<const float> in);
  // this[off, ...) = dtype(this + in), element by element.
  void add(size_t off, std::span<const float> in);
  void fill_zero();

 private:
  device::cpu::AlignedBuffer<std::byte> device_;
  device::cpu::HostBuffer<std::byte> host_;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  DType dtype_ = DType::kFloat32;
  bool on_host_ = false;
};

// out[i] = float(dtype(in[i])) (round to nearest even, values exactly
// representable in the 16-bit type kept as float); a plain copy for fp32.
// in and out have the same length (checked) and may be the same. OpenMP
// over 4096-element blocks.
void round_to(DType dtype, std::span<const float> in, std::span<float> out);

// Converts n elements of `dtype` at src to fp32 (a copy for fp32), and back.
void to_fp32(DType dtype, const std::byte* src, size_t n, float* out);
void from_fp32(DType dtype, const float* in, size_t n, std::byte* dst);

}  // namespace zerotrain::zero
