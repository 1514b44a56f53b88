// The CPU device's optimizer and reduction kernels (host memory, OpenMP,
// run-time SIMD level; every level gives the same bits). Ops::adam, sgd,
// sum_squares and scale of the CPU ops are these.
//
//   adam_update(step, p, g, DType::kFloat32, m, v, nullptr, DType::kFloat32, n);
//   double sq = sum_squares(g, n);      // fixed blocks, fixed order
//
// Thread-safety: pure functions over caller memory; internally parallel.
#pragma once

#include <cstddef>

#include "core/dtype.h"
#include "device/ops.h"

namespace zerotrain::device::cpu {

// Ops::adam: copy null for none.
void adam_update(const AdamStep& step, float* params, const void* grads, DType grad_dtype,
                 float* exp_avg, float* exp_avg_sq, void* copy, DType copy_dtype, size_t n);
void sgd_update(const SgdStep& step, float* params, const float* grads, float* momentum_buffer,
                size_t n);
// Any inf or NaN among x[0, n).
bool has_inf_or_nan(const float* x, size_t n);
// Σ x² in double over 32 Ki-element blocks summed in block order: the same
// value for any thread count.
double sum_squares(const float* x, size_t n);
// The same over fp32/fp16/bf16 elements, each widened exactly: equal to
// sum_squares of their fp32 values, bit for bit.
double sum_squares(DType dtype, const void* x, size_t n);
void scale(float* x, size_t n, float factor);

}  // namespace zerotrain::device::cpu
