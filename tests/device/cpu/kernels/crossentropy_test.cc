// Fused softmax + cross-entropy: losses against the double reference,
// dlogits against double central differences (B=2, T=5, V=17, Vp=20 padded),
// ignored targets, padding columns, in-place dlogits, the fused call equal
// to the two-call path, NaN propagation, and the target-range error.
#include <gtest/gtest.h>

#include <cmath>

#include "device/cpu/kernels/ops.h"
#include "device/cpu/kernels/reference.h"

namespace zerotrain::device::cpu {
namespace {

using testing::expect_all_near;
using testing::expect_gradient_near;
using testing::random_floats;
using testing::to_double;
using testing::Vec;
namespace ref = testing::ref;

constexpr int B = 2, T = 5, V = 17, Vp = 20;

// Target -1 at (b=1, t=2) is ignored.
std::vector<int32_t> targets() { return {0, 16, 5, 5, 9, 3, 1, -1, 12, 7}; }

TEST(CrossEntropy, ForwardMatchesReference) {
  auto logits = random_floats(B * T * Vp, 1, 3.0f);
  for (int r = 0; r < B * T; ++r) logits[r * Vp + 1] += 40.0f;  // large logits stay finite
  const auto tg = targets();
  std::vector<float> losses(B * T), lse(B * T);
  ASSERT_TRUE(
      crossentropy_forward(losses.data(), lse.data(), logits.data(), tg.data(), B, T, V, Vp).ok());
  expect_all_near(losses, ref::crossentropy(to_double(logits), tg, B * T, V, Vp), 1e-5, "losses");
  EXPECT_EQ(losses[1 * T + 2], 0.0f);
}

TEST(CrossEntropy, BackwardMatchesFiniteDifferencesAndZeroesPadding) {
  auto logits = random_floats(B * T * Vp, 2, 2.0f);
  const auto tg = targets();
  std::vector<float> losses(B * T), lse(B * T), dlogits(B * T * Vp, 123.0f);
  ASSERT_TRUE(
      crossentropy_forward(losses.data(), lse.data(), logits.data(), tg.data(), B, T, V, Vp).ok());
  const float dloss = 1.0f / (B * T - 1);
  crossentropy_backward(dlogits.data(), logits.data(), lse.data(), tg.data(), dloss, B, T, V, Vp);
  // L = dloss · Σ losses: its gradient is dlogits.
  auto f = [&](const Vec& x) {
    double s = 0;
    for (double l : ref::crossentropy(x, tg, B * T, V, Vp)) s += dloss * l;
    return s;
  };
  expect_gradient_near(f, to_double(logits), dlogits, "dlogits");
  for (int r = 0; r < B * T; ++r) {
    double row_sum = 0;
    for (int v = 0; v < V; ++v) row_sum += dlogits[r * Vp + v];
    EXPECT_NEAR(row_sum, 0.0, 1e-6) << "softmax minus one-hot sums to zero, row " << r;
    for (int v = V; v < Vp; ++v) EXPECT_EQ(dlogits[r * Vp + v], 0.0f);
  }
  for (int v = 0; v < Vp; ++v) EXPECT_EQ(dlogits[(1 * T + 2) * Vp + v], 0.0f) << "ignored row";
}

TEST(CrossEntropy, InPlaceAndFusedAgreeWithTwoCalls) {
  auto logits = random_floats(B * T * Vp, 3, 2.0f);
  const auto tg = targets();
  std::vector<float> losses(B * T), lse(B * T), dlogits(B * T * Vp);
  ASSERT_TRUE(
      crossentropy_forward(losses.data(), lse.data(), logits.data(), tg.data(), B, T, V, Vp).ok());
  crossentropy_backward(dlogits.data(), logits.data(), lse.data(), tg.data(), 0.5f, B, T, V, Vp);
  std::vector<float> inplace = logits;
  crossentropy_backward(inplace.data(), inplace.data(), lse.data(), tg.data(), 0.5f, B, T, V, Vp);
  EXPECT_EQ(inplace, dlogits);
  std::vector<float> fused = logits, fused_losses(B * T);
  ASSERT_TRUE(crossentropy_forward_backward(fused_losses.data(), fused.data(), fused.data(),
                                            tg.data(), 0.5f, B, T, V, Vp)
                  .ok());
  EXPECT_EQ(fused, dlogits);
  EXPECT_EQ(fused_losses, losses);
  // The bf16 form: the same losses, dlogits rounded bit for bit (padding
  // columns and the ignored row 0 bits), and a bad target still refused.
  std::vector<BFloat16> d16(B * T * Vp, BFloat16{0xffff});
  std::vector<float> losses16(B * T);
  ASSERT_TRUE(crossentropy_forward_backward_bf16(losses16.data(), d16.data(), logits.data(),
                                                 tg.data(), 0.5f, B, T, V, Vp)
                  .ok());
  EXPECT_EQ(losses16, losses);
  for (size_t i = 0; i < d16.size(); ++i) ASSERT_EQ(d16[i], to_bfloat16(dlogits[i])) << i;
  auto bad = tg;
  bad[2] = V;
  EXPECT_FALSE(crossentropy_forward_backward_bf16(losses16.data(), d16.data(), logits.data(),
                                                  bad.data(), 0.5f, B, T, V, Vp)
                   .ok());
}

// A NaN logit must surface in that row's loss and gradient (overflow checks
// downstream rely on it), and leave the other rows finite.
TEST(CrossEntropy, NanLogitPropagatesToItsRowOnly) {
  auto logits = random_floats(B * T * Vp, 4);
  logits[3 * Vp + 6] = std::nanf("");
  const auto tg = targets();
  std::vector<float> losses(B * T), dlogits(B * T * Vp);
  ASSERT_TRUE(crossentropy_forward_backward(losses.data(), dlogits.data(), logits.data(), tg.data(),
                                            1.0f, B, T, V, Vp)
                  .ok());
  for (int r = 0; r < B * T; ++r) {
    EXPECT_EQ(std::isnan(losses[r]), r == 3) << "row " << r;
    EXPECT_EQ(std::isnan(dlogits[r * Vp]), r == 3) << "row " << r;
  }
}

TEST(CrossEntropy, TargetOutOfRangeNamesPosition) {
  std::vector<float> logits(B * T * Vp), losses(B * T);
  auto tg = targets();
  tg[1 * T + 4] = V;
  Status s = crossentropy_forward(losses.data(), nullptr, logits.data(), tg.data(), B, T, V, Vp);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("target 17 at (b=1, t=4)"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace zerotrain::device::cpu
