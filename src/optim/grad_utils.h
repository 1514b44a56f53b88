// Gradient utilities for the step boundary: overflow detection, L2 norms
// (accumulated in double) and DeepSpeed's one-multiply unscale-and-clip.
//
//   bool overflow = has_inf_or_nan(grads);               // then max-reduce over ranks
//   double local_sq = squared_l2_norm(grads);            // allreduce(sum) local_sq, then
//   double norm = std::sqrt(global_sq);                  // norm of the *scaled* grads
//   unscale_and_clip({&grad_span, 1}, norm, scaler.loss_scale(), gradient_clipping);
//   // or, fused into the optimizer's pass (what the engine does):
//   opt.update(params, grads, states, {},
//              unscale_and_clip_factor(norm, scaler.loss_scale(), gradient_clipping));
//
// With a loss scale s, clip value C > 0 and the scaled-grad norm n:
//   c = max(1, (n / s + 1e-6) / C),   g <- g * (1 / (c * s))
// (runtime/zero/stage_1_and_2.py unscale_and_clip_grads). C <= 0 disables
// clipping (only unscales). Call it only for finite n: skip overflow steps.
//
// The reductions are deterministic for a given SIMD level whatever the
// OpenMP thread count: blocks of fixed size are summed in a fixed order.
// Thread-safety: pure functions over caller memory; internally parallel.
#pragma once

#include <span>

#include "core/half.h"

namespace zerotrain::optim {

bool has_inf_or_nan(std::span<const float> x);
bool has_inf_or_nan(std::span<const Half> x);
bool has_inf_or_nan(std::span<const BFloat16> x);

// Sum of squares in double (what ranks all-reduce before the square root).
double squared_l2_norm(std::span<const float> x);
// sqrt of the summed squares of all spans.
double global_l2_norm(std::span<const std::span<const float>> xs);

void scale_in_place(std::span<float> x, float factor);

// The clip coefficient c above (>= 1).
double clip_coefficient(double total_norm, double loss_scale, double gradient_clipping);

// The one multiplier of the unscale and clip, 1 / (c * loss_scale) in
// fp32; exactly 1 when c * loss_scale is. A fused optimizer applies it as
// it reads each grad (Optimizer::update's grad_scale).
float unscale_and_clip_factor(double total_norm, double loss_scale, double gradient_clipping);

// Multiplies every grad by unscale_and_clip_factor; returns c * loss_scale.
double unscale_and_clip(std::span<const std::span<float>> grads, double total_norm,
                        double loss_scale, double gradient_clipping);

}  // namespace zerotrain::optim
