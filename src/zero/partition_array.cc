// PartitionArray: storage and fp32 conversions (see partition_array.h).
#include "zero/partition_array.h"

#include <string>

#include "zero/memory_ops.h"

namespace zerotrain::zero {

StatusOr<PartitionArray> PartitionArray::allocate(device::Device& device, DType dtype, size_t n,
                                                  Placement where, std::string_view what) {
  PartitionArray a;
  a.dtype_ = dtype;
  a.size_ = n;
  const size_t bytes = n * dtype_size(dtype);
  if (where.host) {
    ZT_ASSIGN_OR_RETURN(a.buffer_, device.allocate_host(bytes, where.pin, where.category, what));
  } else {
    ZT_ASSIGN_OR_RETURN(a.buffer_, device.allocate(bytes, where.category, what));
  }
  return a;
}

Status PartitionArray::read(size_t off, Tensor out) const {
  ZT_CHECK(off + out.numel <= size_, "PartitionArray::read past the end");
  return convert_to(slice(off, out.numel), out);
}

Status PartitionArray::write(size_t off, ConstTensor in) {
  ZT_CHECK(off + in.numel <= size_, "PartitionArray::write past the end");
  return convert_to(in, slice(off, in.numel));
}

Status PartitionArray::add(size_t off, ConstTensor in) {
  ZT_CHECK(off + in.numel <= size_, "PartitionArray::add past the end");
  return add_to(slice(off, in.numel), in);
}

Status PartitionArray::fill_zero() { return zero::fill_zero(tensor()); }

}  // namespace zerotrain::zero
