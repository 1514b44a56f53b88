// Causal self-attention: forward against the double reference, backward
// against double central differences (B=2, T=5, C=12, NH=3; and T=70 across
// two query-row blocks), the lse-keeping pair against the att-keeping one,
// the saved att is a causal row-stochastic matrix, future tokens do not
// change earlier outputs, and a C that NH does not divide is rejected.
#include <gtest/gtest.h>

#include <cmath>

#include "device/cpu/kernels/ops.h"
#include "device/cpu/kernels/reference.h"

namespace zerotrain::device::cpu {
namespace {

using testing::dot;
using testing::expect_all_near;
using testing::expect_gradient_near;
using testing::random_floats;
using testing::to_double;
using testing::Vec;
namespace ref = testing::ref;

struct AttnRun {
  std::vector<float> out, att;
};

AttnRun forward(const std::vector<float>& qkv, int B, int T, int C, int NH) {
  AttnRun r{std::vector<float>(B * T * C), std::vector<float>(B * NH * T * T)};
  Status s = attention_forward(r.out.data(), r.att.data(), qkv.data(), B, T, C, NH);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return r;
}

TEST(Attention, ForwardMatchesReferenceAndAttIsCausalStochastic) {
  constexpr int B = 2, T = 5, C = 12, NH = 3;
  auto qkv = random_floats(B * T * 3 * C, 1);
  AttnRun r = forward(qkv, B, T, C, NH);
  expect_all_near(r.out, ref::attention(to_double(qkv), B, T, C, NH), 1e-5, "out");
  for (int bh = 0; bh < B * NH; ++bh)
    for (int t = 0; t < T; ++t) {
      double sum = 0;
      for (int j = 0; j < T; ++j) {
        const float a = r.att[(bh * T + t) * T + j];
        if (j > t) {
          EXPECT_EQ(a, 0.0f) << "future weight at bh=" << bh << " t=" << t;
        }
        sum += a;
      }
      EXPECT_NEAR(sum, 1.0, 1e-6);
    }
}

TEST(Attention, BackwardMatchesFiniteDifferences) {
  constexpr int B = 2, T = 5, C = 12, NH = 3;
  auto qkv = random_floats(B * T * 3 * C, 2);
  AttnRun r = forward(qkv, B, T, C, NH);
  auto g = random_floats(B * T * C, 3);
  auto d0 = random_floats(B * T * 3 * C, 4);  // nonzero start: must accumulate
  std::vector<float> dqkv = d0;
  ASSERT_TRUE(
      attention_backward(dqkv.data(), g.data(), qkv.data(), r.att.data(), B, T, C, NH).ok());
  for (size_t i = 0; i < dqkv.size(); ++i) dqkv[i] -= d0[i];
  expect_gradient_near([&](const Vec& x) { return dot(g, ref::attention(x, B, T, C, NH)); },
                       to_double(qkv), dqkv, "dqkv");
}

// T = 70 spans two query-row blocks (64 + a partial 6), so the blocked
// causal GEMMs and their block boundaries are exercised.
TEST(Attention, LongSequenceAcrossRowBlocksMatchesReferenceAndDifferences) {
  constexpr int B = 1, T = 70, C = 8, NH = 2;
  auto qkv = random_floats(B * T * 3 * C, 8);
  AttnRun r = forward(qkv, B, T, C, NH);
  expect_all_near(r.out, ref::attention(to_double(qkv), B, T, C, NH), 1e-5, "out");
  auto g = random_floats(B * T * C, 9);
  std::vector<float> dqkv(B * T * 3 * C, 0.0f);
  ASSERT_TRUE(
      attention_backward(dqkv.data(), g.data(), qkv.data(), r.att.data(), B, T, C, NH).ok());
  expect_gradient_near([&](const Vec& x) { return dot(g, ref::attention(x, B, T, C, NH)); },
                       to_double(qkv), dqkv, "dqkv");
}

// lse[b,h,t] = log Σ_{j<=t} exp(q_t·k_j/√hs), in double.
Vec reference_lse(const std::vector<float>& qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  Vec lse(B * NH * T);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        double sum = 0;
        for (int j = 0; j <= t; ++j) {
          double s = 0;
          for (int i = 0; i < hs; ++i)
            s += double(qkv[(b * T + t) * 3 * C + h * hs + i]) *
                 qkv[(b * T + j) * 3 * C + C + h * hs + i];
          sum += std::exp(s / std::sqrt(double(hs)));
        }
        lse[(b * NH + h) * T + t] = std::log(sum);
      }
  return lse;
}

// The memory-lean pair keeps lse instead of att: same forward output (bit
// for bit: same GEMMs and softmax), lse as defined, and a backward that
// matches finite differences and the att-keeping backward.
TEST(Attention, LsePairMatchesAttPairAndFiniteDifferences) {
  constexpr int B = 2, T = 70, C = 8, NH = 2;
  auto qkv = random_floats(B * T * 3 * C, 10);
  AttnRun r = forward(qkv, B, T, C, NH);
  std::vector<float> out(B * T * C), lse(B * NH * T);
  ASSERT_TRUE(attention_forward_lse(out.data(), lse.data(), qkv.data(), B, T, C, NH).ok());
  EXPECT_EQ(out, r.out);
  expect_all_near(lse, reference_lse(qkv, B, T, C, NH), 1e-5, "lse");
  auto g = random_floats(B * T * C, 11);
  std::vector<float> d_lse(B * T * 3 * C, 0.0f), d_att(B * T * 3 * C, 0.0f);
  ASSERT_TRUE(
      attention_backward_lse(d_lse.data(), g.data(), qkv.data(), lse.data(), B, T, C, NH).ok());
  ASSERT_TRUE(
      attention_backward(d_att.data(), g.data(), qkv.data(), r.att.data(), B, T, C, NH).ok());
  for (size_t i = 0; i < d_lse.size(); ++i) {
    ASSERT_NEAR(d_lse[i], d_att[i], 1e-5 * (1 + std::fabs(d_att[i]))) << i;
  }
  expect_gradient_near([&](const Vec& x) { return dot(g, ref::attention(x, B, T, C, NH)); },
                       to_double(qkv), d_lse, "dqkv (lse)");
}

TEST(Attention, SingleHeadAndSingleTokenEdgeShapes) {
  // T = 1: the only weight is 1, so out equals v.
  auto qkv = random_floats(1 * 1 * 3 * 8, 5);
  AttnRun one = forward(qkv, 1, 1, 8, 1);
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(one.out[i], qkv[16 + i]);
  auto qkv2 = random_floats(3 * 7 * 3 * 6, 6);
  AttnRun r = forward(qkv2, 3, 7, 6, 1);
  expect_all_near(r.out, ref::attention(to_double(qkv2), 3, 7, 6, 1), 1e-5, "NH=1 out");
}

// Changes from t0 on (t0 in the first and in the second row block of T=70)
// leave outputs before t0 bit for bit unchanged.
TEST(Attention, FutureTokensDoNotChangeEarlierOutputs) {
  constexpr int B = 2, T = 70, C = 12, NH = 3;
  auto qkv = random_floats(B * T * 3 * C, 7);
  AttnRun before = forward(qkv, B, T, C, NH);
  for (int t0 : {4, 66}) {
    auto changed = qkv;
    for (int b = 0; b < B; ++b)
      for (int t = t0; t < T; ++t)
        for (int i = 0; i < 3 * C; ++i) changed[(b * T + t) * 3 * C + i] += 5.0f;
    AttnRun after = forward(changed, B, T, C, NH);
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < t0; ++t)
        for (int c = 0; c < C; ++c) {
          const int i = (b * T + t) * C + c;
          ASSERT_EQ(before.out[i], after.out[i]) << "t0=" << t0 << " b=" << b << " t=" << t;
        }
    // And the change is visible from t0 on (the test is not vacuous).
    EXPECT_NE(before.out[(0 * T + t0) * C], after.out[(0 * T + t0) * C]) << "t0=" << t0;
  }
}

// A NaN in token 2's key reaches every output at t >= 2 of that batch and
// head, none before it.
TEST(Attention, NanKeyPropagatesForwardInTimeOnly) {
  constexpr int B = 1, T = 6, C = 8, NH = 2;
  auto qkv = random_floats(B * T * 3 * C, 12);
  qkv[2 * 3 * C + C + 1] = std::nanf("");  // t=2, k, head 0
  AttnRun r = forward(qkv, B, T, C, NH);
  for (int t = 0; t < T; ++t) {
    EXPECT_EQ(std::isnan(r.out[t * C + 0]), t >= 2) << "head 0, t=" << t;
    EXPECT_FALSE(std::isnan(r.out[t * C + 4])) << "head 1, t=" << t;
  }
}

// A sliding window (query t sees t-W+1 .. t), within packed documents: the
// lse pair skips the keys before a row block's first and still matches the
// masked double reference and its finite differences, across three row
// blocks whose queries start at different keys.
TEST(Attention, SlidingWindowInPackedDocumentsMatchesMaskedReference) {
  constexpr int B = 2, T = 150, C = 8, NH = 2, W = 20;
  std::vector<int32_t> first(B * T);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const int doc = b == 1 && t >= 97 ? 97 : 0;  // row 1 packs a second document at 97
      first[b * T + t] = std::max(doc, t - W + 1);
    }
  auto qkv = random_floats(B * T * 3 * C, 12);
  std::vector<float> out(B * T * C), lse(B * NH * T);
  ASSERT_TRUE(
      attention_forward_lse(out.data(), lse.data(), qkv.data(), B, T, C, NH, first.data()).ok());
  expect_all_near(out, ref::attention(to_double(qkv), B, T, C, NH, first.data()), 1e-5, "out");
  auto g = random_floats(B * T * C, 13);
  auto d0 = random_floats(B * T * 3 * C, 14);  // nonzero start: must accumulate
  std::vector<float> dqkv = d0;
  ASSERT_TRUE(attention_backward_lse(dqkv.data(), g.data(), qkv.data(), lse.data(), B, T, C, NH,
                                     first.data())
                  .ok());
  for (size_t i = 0; i < dqkv.size(); ++i) dqkv[i] -= d0[i];
  expect_gradient_near(
      [&](const Vec& x) { return dot(g, ref::attention(x, B, T, C, NH, first.data())); },
      to_double(qkv), dqkv, "dqkv");
}

TEST(Attention, ChannelsNotDivisibleByHeadsIsInvalidArgument) {
  std::vector<float> buf(1000);
  Status s = attention_forward(buf.data(), buf.data(), buf.data(), 1, 2, 10, 3);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("C=10 is not a multiple of NH=3"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace zerotrain::device::cpu
