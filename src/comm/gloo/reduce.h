// Element-wise reduction kernels used by the ring collectives. 16-bit inputs are widened to fp32,
// combined, and rounded once per call.
//
//   // dst[i] = (a[i] + b[i]) / 4, in bf16
//   reduce_combine(dst, a, b, n, DType::kBFloat16, ReduceOp::kAvg, /*divisor=*/4);
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm/types.h"
#include "core/half.h"

namespace zerotrain::comm {

// fp16/bf16 <-> fp32 are core/half.h's (round to nearest even, NaN kept).
using zerotrain::bf16_bits_to_fp32;
using zerotrain::fp16_bits_to_fp32;
using zerotrain::fp32_to_bf16_bits;
using zerotrain::fp32_to_fp16_bits;

// dst[i] = op(a[i], b[i]) for `count` elements of `dtype`; dst may alias a or
// b. For kSum and kAvg the result is then divided by `divisor` (pass 1 except
// on the last step of an average). Max/min propagate NaN.
void reduce_combine(void* dst, const void* a, const void* b, size_t count, DType dtype, ReduceOp op,
                    int divisor);

// data[i] /= divisor (used for kAvg when there is nothing to combine).
void divide_inplace(void* data, size_t count, DType dtype, int divisor);

}  // namespace zerotrain::comm
