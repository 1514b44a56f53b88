// Causal self-attention: forward against the double reference, backward
// against double central differences (B=2, T=5, C=12, NH=3; and T=70 across
// two query-row blocks), the saved att
// is a causal row-stochastic matrix, future tokens do not change earlier
// outputs, and a C that NH does not divide is rejected.
#include <gtest/gtest.h>

#include "kernels/cpu/ops.h"
#include "kernels/reference.h"

namespace zerotrain::kernels::cpu {
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

TEST(Attention, ChannelsNotDivisibleByHeadsIsInvalidArgument) {
  std::vector<float> buf(1000);
  Status s = attention_forward(buf.data(), buf.data(), buf.data(), 1, 2, 10, 3);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("C=10 is not a multiple of NH=3"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace zerotrain::kernels::cpu
