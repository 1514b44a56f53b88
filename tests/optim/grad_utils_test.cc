// Gradient utilities: overflow detection at every position and SIMD level,
// closed-form norms, thread-count independence, DeepSpeed's clip math.
#include "optim/grad_utils.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "device/cpu/cpu_features.h"

namespace zerotrain::optim {
namespace {

using device::cpu::SimdLevel;

std::vector<SimdLevel> levels() {
  std::vector<SimdLevel> l = {SimdLevel::kPortable};
  if (device::cpu::detected_simd_level() >= SimdLevel::kAvx2) l.push_back(SimdLevel::kAvx2);
  if (device::cpu::detected_simd_level() >= SimdLevel::kAvx512) l.push_back(SimdLevel::kAvx512);
  return l;
}

TEST(GradUtilsTest, FindsInfOrNanAtAnyPositionOnEveryLevel) {
  const size_t n = 5 * (size_t{1} << 15) + 7;  // several blocks and a tail
  std::vector<float> x(n, 1.0f);
  const float bad_values[] = {
      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
      std::numeric_limits<float>::quiet_NaN(), std::bit_cast<float>(0x7f800001u)};
  for (SimdLevel level : levels()) {
    device::cpu::ScopedSimdLevel scoped(level);
    EXPECT_FALSE(has_inf_or_nan(x));
    for (size_t pos : {size_t{0}, size_t{15}, size_t{16}, size_t{40000}, n - 8, n - 1}) {
      for (float bad : bad_values) {
        x[pos] = bad;
        EXPECT_TRUE(has_inf_or_nan(x)) << device::cpu::simd_level_name(level) << " at " << pos;
        x[pos] = std::numeric_limits<float>::max();  // finite: not an overflow
        EXPECT_FALSE(has_inf_or_nan(x));
        x[pos] = 1.0f;
      }
    }
  }
  EXPECT_FALSE(has_inf_or_nan(std::span<const float>()));
}

TEST(GradUtilsTest, SixteenBitOverflowChecks) {
  std::vector<Half> h = {to_half(1.0f), to_half(65504.0f)};
  EXPECT_FALSE(has_inf_or_nan(std::span<const Half>(h)));
  h.push_back(Half{0x7c00});
  EXPECT_TRUE(has_inf_or_nan(std::span<const Half>(h)));
  std::vector<BFloat16> b = {to_bfloat16(3e38f)};
  EXPECT_FALSE(has_inf_or_nan(std::span<const BFloat16>(b)));
  b.push_back(BFloat16{0xffc0});
  EXPECT_TRUE(has_inf_or_nan(std::span<const BFloat16>(b)));
}

// x_i = i: sum of squares (n-1) n (2n-1) / 6, exact in double here.
TEST(GradUtilsTest, SquaredNormIsClosedFormOnEveryLevelAndThreadCount) {
  const size_t n = 300'001;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i);
  const double nd = static_cast<double>(n);
  const double expected = (nd - 1) * nd * (2 * nd - 1) / 6;
  const int threads = omp_get_max_threads();
  for (SimdLevel level : levels()) {
    device::cpu::ScopedSimdLevel scoped(level);
    EXPECT_EQ(squared_l2_norm(x), expected) << device::cpu::simd_level_name(level);
    omp_set_num_threads(1);
    const double one = squared_l2_norm(x);
    omp_set_num_threads(3);
    const double three = squared_l2_norm(x);
    omp_set_num_threads(threads);
    EXPECT_EQ(one, three);
  }
}

TEST(GradUtilsTest, GlobalNormCombinesSpans) {
  const std::vector<float> a = {3.0f}, b = {4.0f, 12.0f};
  const std::span<const float> spans[] = {a, b};
  EXPECT_DOUBLE_EQ(global_l2_norm(spans), 13.0);
  // Accumulation in double: 1e8 values of 1e-4... a float sum would drift.
  std::vector<float> small(1 << 20, 0.1f);
  const double want = std::sqrt(static_cast<double>(small.size()) * 0.1f * 0.1f);
  const std::span<const float> one[] = {small};
  EXPECT_NEAR(global_l2_norm(one), want, 1e-9 * want);
}

TEST(GradUtilsTest, ClipCoefficientFollowsDeepSpeed) {
  EXPECT_DOUBLE_EQ(clip_coefficient(10.0, 2.0, 1.0), (10.0 / 2.0 + 1e-6) / 1.0);
  EXPECT_EQ(clip_coefficient(10.0, 2.0, 10.0), 1.0);  // norm 5 under clip 10
  EXPECT_EQ(clip_coefficient(10.0, 2.0, 0.0), 1.0);   // clipping disabled
}

TEST(GradUtilsTest, UnscaleAndClipIsOneMultiply) {
  // True grads (3, 4), norm 5; scaled by 2 -> (6, 8), norm 10.
  std::vector<float> g = {6.0f, 8.0f};
  const std::span<float> spans[] = {g};
  const double combined = unscale_and_clip(spans, 10.0, 2.0, 1.0);
  EXPECT_DOUBLE_EQ(combined, (5.0 + 1e-6) * 2.0);
  const float factor = static_cast<float>(1.0 / combined);
  EXPECT_EQ(unscale_and_clip_factor(10.0, 2.0, 1.0), factor);  // the fused optimizers' multiplier
  EXPECT_EQ(unscale_and_clip_factor(10.0, 2.0, 0.0), 0.5f);
  EXPECT_EQ(unscale_and_clip_factor(0.5, 1.0, 1.0), 1.0f);  // below the clip, no loss scale
  EXPECT_EQ(g[0], 6.0f * factor);
  EXPECT_EQ(g[1], 8.0f * factor);
  EXPECT_NEAR(std::hypot(g[0], g[1]), 1.0, 1e-6);  // clipped to norm 1

  std::vector<float> u = {6.0f, 8.0f};
  const std::span<float> us[] = {u};
  EXPECT_EQ(unscale_and_clip(us, 10.0, 2.0, 0.0), 2.0);  // only unscale
  EXPECT_EQ(u[0], 3.0f);
  EXPECT_EQ(u[1], 4.0f);
}

}  // namespace
}  // namespace zerotrain::optim
