// Element ops between tensors that may live in different memories — a
// device's and the host's, as offload places them. Within one memory the
// op is that memory's Ops entry; across memories one side is first copied
// into the other's memory (a transient staging buffer: device memory
// counted as buffers, or host memory), converting on the side that makes
// the transfer narrower (fp32 master -> bf16 weights rounds before it
// crosses; bf16 -> fp32 crosses before it widens).
//
//   ZT_RETURN_IF_ERROR(convert_to(master_on_host, params16_on_device));   // rounded
//   ZT_RETURN_IF_ERROR(add_to(grads_on_host, reduced_chunk_on_device));   // grads = dtype(grads +
//   chunk)
//
// Thread-safety: as the Ops and copies they run.
#pragma once

#include "core/status.h"
#include "core/tensor.h"

namespace zerotrain::zero {

// dst = dtype(src): same numel, any dtypes (Ops::convert).
Status convert_to(ConstTensor src, Tensor dst);
// dst = dtype(dst + src): src fp32 (Ops::add).
Status add_to(Tensor dst, ConstTensor src);
// dst[0, n) = 0 in dst's memory.
Status fill_zero(Tensor dst);

}  // namespace zerotrain::zero
