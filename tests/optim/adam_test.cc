// Adam/AdamW: several steps against the formulas evaluated by hand in
// double precision; SIMD levels bit-identical to the portable path; the
// fused fp16/bf16 copy equals converting the fp32 result; option checks.
#include "optim/adam.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "core/half.h"
#include "device/cpu/cpu_features.h"

namespace zerotrain::optim {
namespace {

using device::cpu::SimdLevel;

// grads[t][i] for step t, deterministic and of mixed sign and magnitude.
float grad_at(int t, size_t i) {
  return std::sin(0.7f * static_cast<float>(i) + 1.3f * static_cast<float>(t)) *
         (0.01f + 0.1f * static_cast<float>(i % 5));
}

// The DeepSpeed CPU-Adam update written out in double precision.
void reference_adam(const AdamOptions& o, int steps, std::vector<double>& p) {
  std::vector<double> m(p.size(), 0.0), v(p.size(), 0.0);
  const double b1 = o.betas[0], b2 = o.betas[1], wd = o.weight_decay;
  for (int t = 1; t <= steps; ++t) {
    for (size_t i = 0; i < p.size(); ++i) {
      double g = grad_at(t, i);
      if (!o.adam_w_mode) g += wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      const double bc1 = o.bias_correction ? 1 - std::pow(b1, t) : 1.0;
      const double bc2 = o.bias_correction ? 1 - std::pow(b2, t) : 1.0;
      const double denom = std::sqrt(v[i]) / std::sqrt(bc2) + o.eps;
      if (o.adam_w_mode) p[i] *= 1 - o.lr * wd;
      p[i] -= o.lr / bc1 * m[i] / denom;
    }
  }
}

void run_and_compare(const AdamOptions& o, int steps) {
  const size_t n = 37;
  std::vector<float> p(n), g(n);
  std::vector<double> ref(n);
  for (size_t i = 0; i < n; ++i) ref[i] = p[i] = 0.5f - 0.03f * static_cast<float>(i);
  AdamState s = AdamState::zeros(n);
  auto adam = Adam::create(o);
  ASSERT_TRUE(adam.ok()) << adam.status().to_string();
  for (int t = 1; t <= steps; ++t) {
    for (size_t i = 0; i < n; ++i) g[i] = grad_at(t, i);
    ASSERT_TRUE(adam->step({p, g, s.exp_avg, s.exp_avg_sq}).ok());
  }
  EXPECT_EQ(adam->step_count(), steps);
  reference_adam(o, steps, ref);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_NEAR(p[i], ref[i], 2e-6 * std::max(1.0, std::fabs(ref[i]))) << "element " << i;
  }
}

TEST(AdamTest, AdamWDecoupledDecayMatchesHandComputedSteps) {
  run_and_compare({.lr = 1e-2, .betas = {0.9, 0.999}, .eps = 1e-8, .weight_decay = 0.1}, 5);
}

TEST(AdamTest, L2AdamModeMatchesHandComputedSteps) {
  run_and_compare({.lr = 1e-2, .weight_decay = 0.05, .adam_w_mode = false}, 5);
}

TEST(AdamTest, NoBiasCorrectionMatchesHandComputedSteps) {
  run_and_compare({.lr = 3e-3, .betas = {0.8, 0.95}, .eps = 1e-6, .bias_correction = false}, 4);
}

TEST(AdamTest, DefaultsAreDeepSpeedCpuAdams) {
  const AdamOptions o;
  EXPECT_EQ(o.lr, 1e-3);
  EXPECT_EQ(o.betas[0], 0.9);
  EXPECT_EQ(o.betas[1], 0.999);
  EXPECT_EQ(o.eps, 1e-8);
  EXPECT_EQ(o.weight_decay, 0.0);
  EXPECT_TRUE(o.bias_correction);
  EXPECT_TRUE(o.adam_w_mode);
}

// With bias correction, step 1 gives m_hat = g, v_hat = g^2 exactly, so the
// step is lr * g / (|g| + eps): lr times the sign of g, whatever |g| is.
TEST(AdamTest, FirstStepMovesEachWeightByLrTimesSignOfGrad) {
  std::vector<float> p = {1.0f, 1.0f, 1.0f, 1.0f};
  const std::vector<float> g = {3.0f, -0.25f, 1e-3f, 0.0f};
  AdamState s = AdamState::zeros(4);
  ASSERT_TRUE(adam_update({.lr = 0.01}, 1, {p, g, s.exp_avg, s.exp_avg_sq}).ok());
  for (size_t i = 0; i < 3; ++i) {
    const double expected = 1.0 - 0.01 * g[i] / (std::fabs(g[i]) + 1e-8);
    EXPECT_NEAR(p[i], expected, 1e-7) << i;
  }
  EXPECT_EQ(p[3], 1.0f);  // zero grad: m = 0, no move
  EXPECT_FLOAT_EQ(s.exp_avg[0], 0.1f * 3.0f);
  EXPECT_FLOAT_EQ(s.exp_avg_sq[0], 0.001f * 9.0f);
}

struct RunResult {
  std::vector<float> p, m, v;
  std::vector<uint16_t> copy;
};

RunResult run_level(SimdLevel level, const AdamOptions& o, DType copy_dtype) {
  device::cpu::ScopedSimdLevel scoped(level);
  const size_t n = 3 * (size_t{1} << 16) + 21;  // several OpenMP chunks and a SIMD tail
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  RunResult r{std::vector<float>(n), std::vector<float>(n), std::vector<float>(n),
              std::vector<uint16_t>(n)};
  std::vector<float> g(n);
  for (auto& x : r.p) x = dist(rng);
  for (int t = 1; t <= 3; ++t) {
    for (auto& x : g) x = dist(rng) * 1e-2f;
    Tensor copy{r.copy.data(), copy_dtype, n};
    EXPECT_TRUE(adam_update(o, t, {r.p, g, r.m, r.v}, copy).ok());
  }
  return r;
}

std::vector<SimdLevel> simd_levels() {
  std::vector<SimdLevel> levels;
  if (device::cpu::detected_simd_level() >= SimdLevel::kAvx2) levels.push_back(SimdLevel::kAvx2);
  if (device::cpu::detected_simd_level() >= SimdLevel::kAvx512)
    levels.push_back(SimdLevel::kAvx512);
  return levels;
}

TEST(AdamTest, SimdLevelsAreBitIdenticalToPortableAndCopiesMatchConversion) {
  const AdamOptions modes[] = {{.lr = 1e-3, .weight_decay = 0.01},
                               {.lr = 1e-3, .weight_decay = 0.01, .adam_w_mode = false}};
  for (const AdamOptions& o : modes) {
    for (DType dt : {DType::kBFloat16, DType::kFloat16}) {
      const RunResult want = run_level(SimdLevel::kPortable, o, dt);
      for (size_t i = 0; i < want.p.size(); ++i) {
        const uint16_t expect =
            dt == DType::kBFloat16 ? fp32_to_bf16_bits(want.p[i]) : fp32_to_fp16_bits(want.p[i]);
        ASSERT_EQ(want.copy[i], expect) << "portable copy " << i;
      }
      for (SimdLevel level : simd_levels()) {
        const RunResult got = run_level(level, o, dt);
        for (size_t i = 0; i < want.p.size(); ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(got.p[i]), std::bit_cast<uint32_t>(want.p[i]))
              << device::cpu::simd_level_name(level) << " param " << i;
          ASSERT_EQ(got.m[i], want.m[i]) << i;
          ASSERT_EQ(got.v[i], want.v[i]) << i;
          ASSERT_EQ(got.copy[i], want.copy[i])
              << device::cpu::simd_level_name(level) << " copy " << i;
        }
      }
    }
  }
}

// 16-bit grads are widened exactly, so the result must equal the fp32 path
// on the widened grads, bit for bit, on every level (n leaves tails).
TEST(AdamTest, SixteenBitGradsMatchTheFp32PathOnWidenedGrads) {
  const size_t n = (size_t{1} << 16) + 37;
  std::vector<Half> g16(n);
  std::vector<BFloat16> gb(n);
  std::vector<float> w16(n), wb(n), p0(n);
  for (size_t i = 0; i < n; ++i) {
    const float g = grad_at(1, i) * 3.0f;
    g16[i] = to_half(g);
    gb[i] = to_bfloat16(g);
    w16[i] = to_float(g16[i]);
    wb[i] = to_float(gb[i]);
    p0[i] = 0.25f + 1e-3f * static_cast<float>(i % 101);
  }
  const AdamOptions o{.lr = 1e-2, .weight_decay = 0.1};
  std::vector<SimdLevel> all = simd_levels();
  all.push_back(SimdLevel::kPortable);
  for (SimdLevel level : all) {
    device::cpu::ScopedSimdLevel scoped(level);
    for (bool bf16 : {false, true}) {
      std::vector<float> pa = p0, ma(n), va(n), pb = p0, mb(n), vb(n);
      ASSERT_TRUE(adam_update(o, 2, {pa, bf16 ? wb : w16, ma, va}).ok());
      const ConstTensor grads16 =
          bf16 ? make_view(std::span<const BFloat16>(gb)) : make_view(std::span<const Half>(g16));
      ASSERT_TRUE(adam_update(o, 2, {pb, grads16, mb, vb}).ok());
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(pb[i]), std::bit_cast<uint32_t>(pa[i]))
            << device::cpu::simd_level_name(level) << (bf16 ? " bf16 " : " fp16 ") << i;
        ASSERT_EQ(vb[i], va[i]) << i;
      }
    }
  }
  std::vector<float> p(n), m(n), v(n);
  const Status short_grads =
      adam_update(o, 1, {p, make_view(std::span<const Half>(g16)).slice(0, n - 1), m, v});
  EXPECT_NE(short_grads.message().find("tensor lengths differ"), std::string::npos);
}

// grad_scale (the engine's unscaling and clipping, fused) gives exactly the
// bits of scaling the grads first, on every level, for fp32 and bf16 grads
// and both weight-decay modes (n leaves tails); a scale of 1 changes nothing.
TEST(AdamTest, GradScaleEqualsScalingTheGradsFirst) {
  const size_t n = (size_t{1} << 16) + 37;
  const float scale = 0.37f;
  std::vector<float> g(n), scaled(n), p0(n);
  std::vector<BFloat16> gb(n);
  for (size_t i = 0; i < n; ++i) {
    g[i] = grad_at(1, i) * 3.0f;
    gb[i] = to_bfloat16(g[i]);
    p0[i] = 0.25f + 1e-3f * static_cast<float>(i % 101);
  }
  std::vector<SimdLevel> all = simd_levels();
  all.push_back(SimdLevel::kPortable);
  for (SimdLevel level : all) {
    device::cpu::ScopedSimdLevel scoped(level);
    for (bool adam_w : {true, false}) {
      const AdamOptions o{.lr = 1e-2, .weight_decay = 0.1, .adam_w_mode = adam_w};
      for (bool bf16 : {false, true}) {
        for (size_t i = 0; i < n; ++i) scaled[i] = (bf16 ? to_float(gb[i]) : g[i]) * scale;
        std::vector<float> pa = p0, ma(n), va(n), pb = p0, mb(n), vb(n);
        ASSERT_TRUE(adam_update(o, 2, {pa, scaled, ma, va}).ok());
        AdamTensors t{pb, g, mb, vb};
        if (bf16) t.grads = make_view(std::span<const BFloat16>(gb));
        t.grad_scale = scale;
        ASSERT_TRUE(adam_update(o, 2, t).ok());
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(pb[i]), std::bit_cast<uint32_t>(pa[i]))
              << device::cpu::simd_level_name(level) << (bf16 ? " bf16 " : " fp32 ") << adam_w
              << " " << i;
          ASSERT_EQ(std::bit_cast<uint32_t>(mb[i]), std::bit_cast<uint32_t>(ma[i])) << i;
          ASSERT_EQ(std::bit_cast<uint32_t>(vb[i]), std::bit_cast<uint32_t>(va[i])) << i;
        }
      }
    }
  }
  std::vector<float> pa = p0, ma(n), va(n), pb = p0, mb(n), vb(n);
  ASSERT_TRUE(adam_update({.lr = 1e-2}, 1, {pa, g, ma, va}).ok());
  AdamTensors one{pb, g, mb, vb};
  one.grad_scale = 1.0f;
  ASSERT_TRUE(adam_update({.lr = 1e-2}, 1, one).ok());
  EXPECT_EQ(pa, pb);
}

TEST(AdamTest, RejectsBadOptionsAndMismatchedTensorsNamingTheField) {
  auto neg = Adam::create({.lr = -1.0});
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("invalid lr"), std::string::npos);
  auto beta = Adam::create({.betas = {0.9, 1.0}});
  ASSERT_FALSE(beta.ok());
  EXPECT_NE(beta.status().message().find("betas[1]"), std::string::npos);
  auto wd = Adam::create({.weight_decay = -0.1});
  EXPECT_NE(wd.status().message().find("weight_decay"), std::string::npos);

  std::vector<float> p(4), g(3), m(4), v(4);
  const Status s = adam_update({}, 1, {p, g, m, v});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("params 4, grads 3"), std::string::npos) << s.message();
  std::vector<float> g4(4), wrong_copy(4);
  const Status c = adam_update({}, 1, {p, g4, m, v}, make_view(std::span<float>(wrong_copy)));
  EXPECT_NE(c.message().find("fp16 or bf16"), std::string::npos);
  EXPECT_FALSE(adam_update({}, 0, {p, g4, m, v}).ok());
}

TEST(AdamTest, StepCountDrivesBiasCorrectionAndCanBeRestored) {
  auto a = Adam::create({});
  ASSERT_TRUE(a.ok());
  std::vector<float> p(1), g(1, 1.0f), m(1), v(1);
  EXPECT_FALSE(a->update({p, g, m, v}).ok());  // no begin_step yet
  a->set_step_count(9);
  a->begin_step();
  EXPECT_EQ(a->step_count(), 10);
  a->set_lr(0.5);
  a->set_betas(0.85, 0.99);
  EXPECT_EQ(a->options().lr, 0.5);
  EXPECT_EQ(a->options().betas[0], 0.85);
  ASSERT_TRUE(a->update({p, g, m, v}).ok());
  // Step 10 from zero moments: m = 0.15, v = 0.01, bias-corrected by step 10.
  const double mhat = 0.15 / (1 - std::pow(0.85, 10));
  const double denom = std::sqrt(0.01) / std::sqrt(1 - std::pow(0.99, 10)) + 1e-8;
  EXPECT_NEAR(p[0], -0.5 * mhat / denom, 1e-6);
}

}  // namespace
}  // namespace zerotrain::optim
