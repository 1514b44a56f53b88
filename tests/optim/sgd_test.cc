// SGD: three steps against torch.optim.SGD's update written out in double.
#include "optim/sgd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace zerotrain::optim {
namespace {

float grad_at(int t, size_t i) { return std::cos(0.3f * static_cast<float>(i * t)) - 0.2f; }

void expect_matches_torch(const SgdOptions& o, int steps) {
  const size_t n = 19;
  std::vector<float> p(n), g(n), buf(n);
  std::vector<double> rp(n), rbuf(n);
  for (size_t i = 0; i < n; ++i) rp[i] = p[i] = 1.0f - 0.1f * static_cast<float>(i);
  auto sgd = Sgd::create(o);
  ASSERT_TRUE(sgd.ok()) << sgd.status().to_string();
  for (int t = 1; t <= steps; ++t) {
    for (size_t i = 0; i < n; ++i) g[i] = grad_at(t, i);
    ASSERT_TRUE(sgd->step({p, g, buf}).ok());
    for (size_t i = 0; i < n; ++i) {  // torch.optim.SGD, by hand
      double d = grad_at(t, i) + o.weight_decay * rp[i];
      if (o.momentum != 0) {
        rbuf[i] = t == 1 ? d : o.momentum * rbuf[i] + (1 - o.dampening) * d;
        d = o.nesterov ? d + o.momentum * rbuf[i] : rbuf[i];
      }
      rp[i] -= o.lr * d;
    }
  }
  for (size_t i = 0; i < n; ++i) EXPECT_NEAR(p[i], rp[i], 1e-6) << i;
}

TEST(SgdTest, PlainSgdMatchesTorch) { expect_matches_torch({.lr = 0.1}, 3); }

TEST(SgdTest, MomentumWithDampeningAndDecayMatchesTorch) {
  expect_matches_torch({.lr = 0.05, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01}, 3);
}

TEST(SgdTest, NesterovMatchesTorch) {
  expect_matches_torch({.lr = 0.05, .momentum = 0.8, .weight_decay = 0.02, .nesterov = true}, 4);
}

TEST(SgdTest, FirstStepStoresTheUndampedGradInTheBuffer) {
  auto sgd = Sgd::create({.lr = 1.0, .momentum = 0.9, .dampening = 0.5});
  ASSERT_TRUE(sgd.ok());
  std::vector<float> p = {0.0f}, g = {2.0f}, buf = {123.0f};
  ASSERT_TRUE(sgd->step({p, g, buf}).ok());
  EXPECT_EQ(buf[0], 2.0f);  // torch: buf = clone(d), no dampening
  EXPECT_EQ(p[0], -2.0f);
  ASSERT_TRUE(sgd->step({p, g, buf}).ok());
  EXPECT_FLOAT_EQ(buf[0], 0.9f * 2.0f + 0.5f * 2.0f);
  EXPECT_FLOAT_EQ(p[0], -2.0f - 2.8f);
}

// grad_scale gives exactly the bits of scaling the grads first, with
// momentum and weight decay, over two steps.
TEST(SgdTest, GradScaleEqualsScalingTheGradsFirst) {
  const SgdOptions o{.lr = 0.05, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01};
  auto a = Sgd::create(o), b = Sgd::create(o);
  ASSERT_TRUE(a.ok() && b.ok());
  const size_t n = 37;
  const float scale = 0.37f;
  std::vector<float> pa(n, 0.5f), pb(n, 0.5f), ba(n), bb(n), g(n), scaled(n);
  for (int t = 1; t <= 2; ++t) {
    for (size_t i = 0; i < n; ++i) {
      g[i] = grad_at(t, i);
      scaled[i] = g[i] * scale;
    }
    ASSERT_TRUE(a->step({pa, scaled, ba}).ok());
    ASSERT_TRUE(b->step({pb, g, bb, scale}).ok());
    EXPECT_EQ(pa, pb) << "step " << t;
    EXPECT_EQ(ba, bb) << "step " << t;
  }
}

TEST(SgdTest, RejectsTorchsInvalidCombinations) {
  auto nesterov = Sgd::create({.lr = 0.1, .nesterov = true});
  ASSERT_FALSE(nesterov.ok());
  EXPECT_NE(nesterov.status().message().find("nesterov requires momentum > 0"), std::string::npos);
  EXPECT_FALSE(Sgd::create({.lr = -0.1}).ok());
  auto sgd = Sgd::create({.lr = 0.1, .momentum = 0.9});
  ASSERT_TRUE(sgd.ok());
  std::vector<float> p(3), g(3), buf(2);
  const Status s = sgd->step({p, g, buf});
  EXPECT_NE(s.message().find("momentum_buffer 2"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace zerotrain::optim
