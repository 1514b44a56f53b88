// The step boundary's gradient scalars: DeepSpeed's one-multiply unscale
// and clip. (The element passes — Σ g², scaling — are the device's Ops.)
//
//   // norm: of the *scaled* grads, summed over ranks (ZeroStrategy::gradient_stats)
//   opt.update(params, grads, states, {},
//              unscale_and_clip_factor(norm, scaler.loss_scale(), gradient_clipping));
//
// With a loss scale s, clip value C > 0 and the scaled-grad norm n:
//   c = max(1, (n / s + 1e-6) / C),   g <- g * (1 / (c * s))
// (runtime/zero/stage_1_and_2.py unscale_and_clip_grads). C <= 0 disables
// clipping (only unscales). Call it only for finite n: skip overflow steps.
//
// Thread-safety: pure functions.
#pragma once

namespace zerotrain::optim {

// The clip coefficient c above (>= 1).
double clip_coefficient(double total_norm, double loss_scale, double gradient_clipping);
// The one multiplier of the unscale and clip, 1 / (c * loss_scale) in
// fp32; exactly 1 when c * loss_scale is. A fused optimizer applies it as
// it reads each grad (Optimizer::update's grad_scale).
float unscale_and_clip_factor(double total_norm, double loss_scale, double gradient_clipping);

}  // namespace zerotrain::optim
