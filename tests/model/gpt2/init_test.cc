// Deterministic GPT-2 initialisation: distributions per tensor kind, bit
// identity across runs and thread counts, shard-wise init equals the full
// init, seeds differ.
#include "model/gpt2/init.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "model/gpt2/reference_gpt.h"

namespace zerotrain::model::gpt2 {
namespace {

std::vector<float> init_all(const ParamLayout& layout, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(layout.total_numel()), -1.0f);
  init_parameters(layout, seed, v.data());
  return v;
}

void mean_std(const float* x, int64_t n, double* mean, double* std) {
  double s = 0, s2 = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i], s2 += static_cast<double>(x[i]) * x[i];
  *mean = s / n;
  *std = std::sqrt(s2 / n - *mean * *mean);
}

TEST(Init, DistributionsFollowGpt2) {
  const GptConfig cfg = *preset("gpt2-tiny");  // 4 layers x 192
  const ParamLayout layout = make_layout(cfg);
  const std::vector<float> p = init_all(layout, 7);
  for (const TensorInfo& t : layout.tensors()) {
    const float* x = p.data() + t.offset;
    if (t.kind == ParamKind::kLayerNormWeight || t.kind == ParamKind::kLayerNormBias ||
        t.kind == ParamKind::kLinearBias) {
      const float want = t.kind == ParamKind::kLayerNormWeight ? 1.0f : 0.0f;
      for (int64_t i = 0; i < t.numel; ++i) ASSERT_EQ(x[i], want) << t.name << "[" << i << "]";
      continue;
    }
    double mean, std;
    mean_std(x, t.numel, &mean, &std);
    const double want = t.kind == ParamKind::kResidualProjWeight ? 0.02 / std::sqrt(2.0 * 4) : 0.02;
    // n >= 24576 draws: the sample std is within ~1% (5 sigma) of the truth.
    EXPECT_NEAR(std, want, 0.03 * want) << t.name;
    EXPECT_NEAR(mean, 0.0, 5 * want / std::sqrt(static_cast<double>(t.numel))) << t.name;
  }
  // Gaps between tensors are zero.
  int64_t end = 0;
  for (const TensorInfo& t : layout.tensors()) {
    for (int64_t i = end; i < t.offset; ++i) ASSERT_EQ(p[i], 0.0f) << "gap before " << t.name;
    end = t.offset + t.numel;
  }
}

TEST(Init, PaddedVocabRowsAreZero) {
  const GptConfig cfg = testing::micro_config();  // V 23, Vp 32
  const ParamLayout layout = make_layout(cfg);
  const std::vector<float> p = init_all(layout, 1);
  const TensorInfo& wte = layout.tensor("wte.weight");
  for (int64_t i = 23 * 16; i < wte.numel; ++i) ASSERT_EQ(p[wte.offset + i], 0.0f) << i;
  EXPECT_NE(p[wte.offset + 23 * 16 - 1], 0.0f);
}

TEST(Init, SameSeedIsBitIdenticalAtAnyThreadCountAndOtherSeedsDiffer) {
  const ParamLayout layout = make_layout(*preset("gpt2-tiny"));
  // Each count on its own std::thread: omp_set_num_threads changes only the
  // calling thread's setting, so the main thread's OpenMP pool (which the
  // GEMM tests use) is left alone.
  auto init_with = [&](int threads) {
    std::vector<float> out;
    std::thread([&] {
      omp_set_num_threads(threads);
      out = init_all(layout, 42);
    }).join();
    return out;
  };
  const std::vector<float> one = init_with(1);
  const std::vector<float> two = init_with(2);
  ASSERT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0);
  const std::vector<float> other = init_all(layout, 43);
  const TensorInfo& t = layout.tensor("h.2.attn.c_attn.weight");
  int64_t equal = 0;
  for (int64_t i = 0; i < t.numel; ++i) equal += one[t.offset + i] == other[t.offset + i];
  EXPECT_LT(equal, t.numel / 1000) << "seeds 42 and 43 give nearly the same weights";
}

TEST(Init, AnyRangeMatchesTheFullInit) {
  const ParamLayout layout = make_layout(testing::micro_config());
  const std::vector<float> full = init_all(layout, 5);
  const int64_t n = layout.total_numel();
  // Shards of an uneven size, as a ZeRO rank of 3 would own.
  const int64_t shard = (n + 2) / 3;
  for (int64_t begin = 0; begin < n; begin += shard) {
    const int64_t end = std::min(n, begin + shard);
    std::vector<float> part(static_cast<size_t>(end - begin), -1.0f);
    init_parameter_range(layout, 5, begin, end, part.data());
    ASSERT_EQ(std::memcmp(part.data(), full.data() + begin, part.size() * sizeof(float)), 0)
        << "shard at " << begin;
  }
}

TEST(Init, NormalDrawsAreStandard) {
  // 200k draws of the counter-based generator: mean 0, variance 1, and
  // P(|z| > 2) = 4.55%.
  double s = 0, s2 = 0;
  int tails = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double z = init_normal(9, fnv1a("x"), static_cast<uint64_t>(i));
    s += z, s2 += z * z, tails += std::fabs(z) > 2.0;
  }
  EXPECT_NEAR(s / n, 0.0, 0.012);
  EXPECT_NEAR(s2 / n, 1.0, 0.016);
  EXPECT_NEAR(static_cast<double>(tails) / n, 0.0455, 0.0025);
}

}  // namespace
}  // namespace zerotrain::model::gpt2
