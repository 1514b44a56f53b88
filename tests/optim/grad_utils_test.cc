// DeepSpeed's clip math: the coefficient, and the one fused multiplier
// the optimizers apply (checked against scaling by the host ops).
#include "optim/grad_utils.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "device/cpu/cpu_device.h"
#include "device/ops.h"

namespace zerotrain::optim {
namespace {

TEST(GradUtilsTest, ClipCoefficientFollowsDeepSpeed) {
  EXPECT_DOUBLE_EQ(clip_coefficient(10.0, 2.0, 1.0), (10.0 / 2.0 + 1e-6) / 1.0);
  EXPECT_EQ(clip_coefficient(10.0, 2.0, 10.0), 1.0);  // norm 5 under clip 10
  EXPECT_EQ(clip_coefficient(10.0, 2.0, 0.0), 1.0);   // clipping disabled
}

TEST(GradUtilsTest, UnscaleAndClipIsOneMultiply) {
  // True grads (3, 4), norm 5; scaled by 2 -> (6, 8), norm 10.
  const float factor = static_cast<float>(1.0 / ((5.0 + 1e-6) * 2.0));
  EXPECT_EQ(unscale_and_clip_factor(10.0, 2.0, 1.0), factor);
  EXPECT_EQ(unscale_and_clip_factor(10.0, 2.0, 0.0), 0.5f);  // only unscale
  EXPECT_EQ(unscale_and_clip_factor(0.5, 1.0, 1.0), 1.0f);   // below the clip, no loss scale
  std::vector<float> g = {6.0f, 8.0f};
  ASSERT_TRUE(device::cpu::host_ops().scale(std::span<float>(g), factor).ok());
  EXPECT_EQ(g[0], 6.0f * factor);
  EXPECT_EQ(g[1], 8.0f * factor);
  EXPECT_NEAR(std::hypot(g[0], g[1]), 1.0, 1e-6);  // clipped to norm 1
}

}  // namespace
}  // namespace zerotrain::optim
