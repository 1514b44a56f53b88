// The CPU reduction kernels behind Ops::sum_squares / scale: overflow
// detection at every position and SIMD level, closed-form sums of squares,
// thread-count independence.
#include "device/cpu/optimizer_kernels.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "device/cpu/cpu_features.h"

namespace zerotrain::device::cpu {
namespace {

std::vector<SimdLevel> levels() {
  std::vector<SimdLevel> l = {SimdLevel::kPortable};
  if (detected_simd_level() >= SimdLevel::kAvx2) l.push_back(SimdLevel::kAvx2);
  if (detected_simd_level() >= SimdLevel::kAvx512) l.push_back(SimdLevel::kAvx512);
  return l;
}

TEST(ReductionKernels, FindsInfOrNanAtAnyPositionOnEveryLevel) {
  const size_t n = 5 * (size_t{1} << 15) + 7;  // several blocks and a tail
  std::vector<float> x(n, 1.0f);
  const float bad_values[] = {
      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
      std::numeric_limits<float>::quiet_NaN(), std::bit_cast<float>(0x7f800001u)};
  for (SimdLevel level : levels()) {
    ScopedSimdLevel scoped(level);
    EXPECT_FALSE(has_inf_or_nan(x.data(), x.size()));
    for (size_t pos : {size_t{0}, size_t{15}, size_t{16}, size_t{40000}, n - 8, n - 1}) {
      for (float bad : bad_values) {
        x[pos] = bad;
        EXPECT_TRUE(has_inf_or_nan(x.data(), x.size())) << simd_level_name(level) << " at " << pos;
        x[pos] = std::numeric_limits<float>::max();  // finite: not an overflow
        EXPECT_FALSE(has_inf_or_nan(x.data(), x.size()));
        x[pos] = 1.0f;
      }
    }
  }
  EXPECT_FALSE(has_inf_or_nan(nullptr, 0));
}

// x_i = i: sum of squares (n-1) n (2n-1) / 6, exact in double here.
TEST(ReductionKernels, SquaredNormIsClosedFormOnEveryLevelAndThreadCount) {
  const size_t n = 300'001;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i);
  const double nd = static_cast<double>(n);
  const double expected = (nd - 1) * nd * (2 * nd - 1) / 6;
  const int threads = omp_get_max_threads();
  for (SimdLevel level : levels()) {
    ScopedSimdLevel scoped(level);
    EXPECT_EQ(sum_squares(x.data(), x.size()), expected) << simd_level_name(level);
    omp_set_num_threads(1);
    const double one = sum_squares(x.data(), x.size());
    omp_set_num_threads(3);
    const double three = sum_squares(x.data(), x.size());
    omp_set_num_threads(threads);
    EXPECT_EQ(one, three);
  }
}

// Accumulation in double: 2^20 values of 0.1f; a float sum would drift.
TEST(ReductionKernels, SumOfSquaresAccumulatesInDouble) {
  std::vector<float> small(1 << 20, 0.1f);
  const double want = static_cast<double>(small.size()) * 0.1f * 0.1f;
  EXPECT_NEAR(sum_squares(small.data(), small.size()), want, 1e-12 * want);
}

TEST(ReductionKernels, ScaleMultipliesEveryElement) {
  std::vector<float> x(5 * (size_t{1} << 15) + 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97) - 40.0f;
  std::vector<float> want = x;
  for (float& v : want) v *= 0.375f;
  scale(x.data(), x.size(), 0.375f);
  EXPECT_EQ(x, want);
}

}  // namespace
}  // namespace zerotrain::device::cpu
