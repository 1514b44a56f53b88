// Accuracy of the vectorisable exp and tanh the softmax, cross-entropy and
// GELU kernels use, against libm in double, over their whole useful range;
// and their edge values (underflow to 0, NaN propagation, saturation).
#include "device/cpu/kernels/vec_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace zerotrain::device::cpu {
namespace {

TEST(FastExp, WithinTwoUlpOverNormalRange) {
  double worst = 0;
  for (double x = -87.0; x <= 88.0; x += 1e-3) {
    const float xf = static_cast<float>(x);
    const double want = std::exp(static_cast<double>(xf));
    worst = std::max(worst, std::fabs(fast_exp(xf) - want) / want);
  }
  EXPECT_LT(worst, 2 * 5.97e-8) << "relative error above 2 ulp";
  EXPECT_EQ(fast_exp(0.0f), 1.0f);
}

TEST(FastExp, EdgeValues) {
  EXPECT_EQ(fast_exp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(fast_exp(-100.0f), 0.0f);
  EXPECT_TRUE(std::isnan(fast_exp(std::nanf(""))));
  EXPECT_TRUE(std::isfinite(fast_exp(std::numeric_limits<float>::infinity())));
}

TEST(FastTanh, AbsoluteErrorBelow3e7AndSaturates) {
  double worst = 0;
  for (double x = -12.0; x <= 12.0; x += 1e-4) {
    const float xf = static_cast<float>(x);
    worst = std::max(worst, std::fabs(fast_tanh(xf) - std::tanh(static_cast<double>(xf))));
  }
  EXPECT_LT(worst, 3e-7);
  EXPECT_EQ(fast_tanh(30.0f), 1.0f);
  EXPECT_EQ(fast_tanh(-30.0f), -1.0f);
}

TEST(ParallelChunks, CoversRangeExactlyOnce) {
  for (int64_t n : {0, 1, 15, 16, 17, 1000}) {
    std::vector<int> hits(n, 0);
    parallel_chunks(n, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) ++hits[i];
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << "n=" << n << " i=" << i;
  }
}

}  // namespace
}  // namespace zerotrain::device::cpu
