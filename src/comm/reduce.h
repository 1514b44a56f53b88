// Element-wise reduction kernels used by the ring collectives, and the exact
// fp16/bf16 <-> fp32 conversions they need (round to nearest even, NaN kept
// NaN, overflow to inf). 16-bit inputs are widened to fp32, combined, and
// rounded once per call.
//
//   // dst[i] = (a[i] + b[i]) / 4, in bf16
//   reduce_combine(dst, a, b, n, DType::kBFloat16, ReduceOp::kAvg, /*divisor=*/4);
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm/types.h"

namespace zerotrain::comm {

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t b);
uint16_t float_to_bf16(float f);

// dst[i] = op(a[i], b[i]) for `count` elements of `dtype`; dst may alias a or
// b. For kSum and kAvg the result is then divided by `divisor` (pass 1 except
// on the last step of an average). Max/min propagate NaN.
void reduce_combine(void* dst, const void* a, const void* b, size_t count, DType dtype, ReduceOp op,
                    int divisor);

// data[i] /= divisor (used for kAvg when there is nothing to combine).
void divide_inplace(void* data, size_t count, DType dtype, int divisor);

}  // namespace zerotrain::comm
