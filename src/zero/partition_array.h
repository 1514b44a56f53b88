// PartitionArray: one of ZeRO's per-rank arrays (parameter partition,
// gradient partition, master weights, optimizer states, the 16-bit compute
// copy) in a storage dtype — fp32, or bf16/fp16 so a 16-bit copy takes 2
// bytes an element — in its device's memory or, when offloaded, in host
// memory (pinned, best effort). Reads and writes convert from and to fp32
// (round to nearest even) through the memory's Ops, from and to fp32
// tensors in either memory, so callers work in fp32 whatever the storage.
//
//   ZT_ASSIGN_OR_RETURN(auto p, PartitionArray::allocate(dev, DType::kBFloat16, n,
//       {.host = true, .pin = true, .category = MemoryCategory::kParameters}));
//   ZT_RETURN_IF_ERROR(p.write(0, master));        // p = bf16(master)
//   ZT_RETURN_IF_ERROR(p.add(0, reduced_chunk));   // p = bf16(p + chunk)
//   ZT_RETURN_IF_ERROR(p.read(0, out));            // fp32 values
//
// Thread-safety: like a buffer; one writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor.h"
#include "device/device.h"

namespace zerotrain::zero {

struct Placement {
  bool host = false;  // offloaded: host memory
  bool pin = false;   // host only: page-locked (best effort)
  device::MemoryCategory category = device::MemoryCategory::kBuffers;
};

class PartitionArray {
 public:
  PartitionArray() = default;
  // n zeroed elements of dtype on `device` (or, host, in host memory).
  // ResourceExhausted naming `what` when the memory is not there.
  static StatusOr<PartitionArray> allocate(device::Device& device, DType dtype, size_t n,
                                           Placement where, std::string_view what);

  DType dtype() const { return dtype_; }
  size_t size() const { return size_; }
  bool on_host() const { return buffer_.on_host(); }
  int64_t size_bytes() const { return static_cast<int64_t>(size_ * dtype_size(dtype_)); }
  // The elements (device-tagged unless on the host), or [off, off + n).
  Tensor tensor() const { return buffer_.tensor(dtype_, 0, size_); }
  Tensor slice(size_t off, size_t n) const { return buffer_.tensor(dtype_, off, n); }

  // out = float(this[off, off + out.numel)): out fp32, either memory.
  Status read(size_t off, Tensor out) const;
  // this[off, off + in.numel) = dtype(in): in fp32, either memory.
  Status write(size_t off, ConstTensor in);
  // this[off, ...) = dtype(this + in), element by element.
  Status add(size_t off, ConstTensor in);
  Status fill_zero();

 private:
  device::Buffer buffer_;
  size_t size_ = 0;
  DType dtype_ = DType::kFloat32;
};

}  // namespace zerotrain::zero
