// The unscale-and-clip scalars (see grad_utils.h).
#include "optim/grad_utils.h"

namespace zerotrain::optim {

double clip_coefficient(double total_norm, double loss_scale, double gradient_clipping) {
  if (gradient_clipping <= 0.0) return 1.0;
  const double clip = (total_norm / loss_scale + 1e-6) / gradient_clipping;
  return clip > 1.0 ? clip : 1.0;
}

float unscale_and_clip_factor(double total_norm, double loss_scale, double gradient_clipping) {
  const double combined = clip_coefficient(total_norm, loss_scale, gradient_clipping) * loss_scale;
  return combined == 1.0 ? 1.0f : static_cast<float>(1.0 / combined);
}

}  // namespace zerotrain::optim
