// Element ops across memories (see memory_ops.h).
#include "zero/memory_ops.h"

#include <cstring>
#include <string>
#include <vector>

#include "device/device.h"
#include "device/ops.h"

namespace zerotrain::zero {
namespace {

// n elements of dtype in the memory `like` lives in: device memory of its
// device, or host memory held by `host`.
struct Staging {
  device::Buffer device;
  std::vector<std::byte> host;
  Tensor tensor;
};

StatusOr<Staging> staging_like(device::Device* memory, DType dtype, size_t n) {
  Staging s;
  const size_t bytes = n * dtype_size(dtype);
  if (memory == nullptr) {
    s.host.resize(bytes);
    s.tensor = Tensor(s.host.data(), dtype, n);
    return s;
  }
  ZT_ASSIGN_OR_RETURN(s.device,
                      memory->allocate(bytes, device::MemoryCategory::kBuffers, "staging copy"));
  s.tensor = s.device.tensor(dtype);
  return s;
}

}  // namespace

Status convert_to(ConstTensor src, Tensor dst) {
  if (src.numel != dst.numel)
    return invalid_argument("convert_to: " + std::to_string(src.numel) + " elements into " +
                            std::to_string(dst.numel));
  if (src.numel == 0) return ok_status();
  if (src.device == dst.device) return device::ops_for(dst).convert(src, dst);
  if (dtype_size(dst.dtype) < dtype_size(src.dtype)) {  // narrow where src is, then cross
    ZT_ASSIGN_OR_RETURN(Staging t, staging_like(src.device, dst.dtype, src.numel));
    ZT_RETURN_IF_ERROR(device::ops_for(src).convert(src, t.tensor));
    return device::copy(t.tensor, dst);
  }
  if (src.dtype == dst.dtype) return device::copy(src, dst);
  ZT_ASSIGN_OR_RETURN(Staging t, staging_like(dst.device, src.dtype, src.numel));
  ZT_RETURN_IF_ERROR(device::copy(src, t.tensor));
  return device::ops_for(dst).convert(t.tensor, dst);
}

Status add_to(Tensor dst, ConstTensor src) {
  if (src.numel != dst.numel)
    return invalid_argument("add_to: " + std::to_string(src.numel) + " elements into " +
                            std::to_string(dst.numel));
  if (src.numel == 0) return ok_status();
  if (src.device == dst.device) return device::ops_for(dst).add(dst, src);
  ZT_ASSIGN_OR_RETURN(Staging t, staging_like(dst.device, src.dtype, src.numel));
  ZT_RETURN_IF_ERROR(device::copy(src, t.tensor));
  return device::ops_for(dst).add(dst, t.tensor);
}

Status fill_zero(Tensor dst) {
  if (dst.numel == 0) return ok_status();
  if (dst.device == nullptr) {
    std::memset(dst.data, 0, dst.size_bytes());
    return ok_status();
  }
  return dst.device->fill_zero(dst.data, dst.size_bytes());
}

}  // namespace zerotrain::zero
