// The CPU device's memory-wide element ops behind Ops::convert, add,
// round_through, narrow_in_place and widen_in_place: dtype conversions
// (round to nearest even, the SIMD paths of convert.h) over 32 Ki-element
// blocks on the OpenMP threads (element-wise: the same values with any
// thread count). Moved from zero/'s PartitionArray and grad_wire.
//
//   to_fp32(DType::kBFloat16, src, n, out);            // exact
//   add_rounded(DType::kBFloat16, acc, grads, n);      // acc = bf16(acc + grads)
//
// Thread-safety: pure functions over caller memory.
#pragma once

#include <cstddef>

#include "core/dtype.h"

namespace zerotrain::device::cpu {

// n elements of dtype at src as fp32 (a copy for fp32), and back (rounded).
void to_fp32(DType dtype, const void* src, size_t n, float* out);
void from_fp32(DType dtype, const float* in, size_t n, void* dst);
// Any dtype to any dtype (fp16 <-> bf16 through fp32), parallel in blocks.
void convert_blocks(DType from, const void* src, DType to, void* dst, size_t n);
// dst[i] = dtype(dst[i] + src[i]).
void add_rounded(DType dtype, void* dst, const float* src, size_t n);
// out[i] = float(dtype(in[i])); in == out allowed.
void round_through(DType dtype, const float* in, float* out, size_t n);
// grad_wire's in-place narrowing (scale first) into x's first bytes, and
// the widening back (see Ops).
void narrow_in_place(float* x, size_t n, float scale, DType wire);
void widen_in_place(const void* src, size_t n, DType wire, float scale, float* dst);

}  // namespace zerotrain::device::cpu
