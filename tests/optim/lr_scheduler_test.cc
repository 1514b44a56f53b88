// LR schedulers against DeepSpeed's formulas evaluated by hand, including
// the boundary steps t = -1, 0, N-1, N, T-1, T and past T.
#include "optim/lr_scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "optim/adam.h"
#include "optim/sgd.h"

namespace zerotrain::optim {
namespace {

constexpr double kTol = 1e-12;

// Steps `s` until last_batch_iteration() == t, then returns get_lr().
double lr_at(LrScheduler& s, int64_t t) {
  while (s.last_batch_iteration() < t) s.step();
  EXPECT_EQ(s.last_batch_iteration(), t);
  return s.get_lr();
}

TEST(WarmupLrTest, LogWarmupThenConstant) {
  auto s =
      WarmupLr::create({.warmup_min_lr = 0.01, .warmup_max_lr = 0.1, .warmup_num_steps = 10}, 1.0);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->last_batch_iteration(), -1);
  EXPECT_NEAR((*s)->get_lr(), 0.01, kTol);  // before the first step: min
  EXPECT_NEAR(lr_at(**s, 0), 0.01, kTol);   // ln(1) = 0
  EXPECT_NEAR(lr_at(**s, 1), 0.01 + 0.09 * std::log(2.0) / std::log(10.0), kTol);
  EXPECT_NEAR(lr_at(**s, 5), 0.01 + 0.09 * std::log(6.0) / std::log(10.0), kTol);
  EXPECT_NEAR(lr_at(**s, 9), 0.1, kTol);  // t = N-1: ln(N)/ln(N)
  EXPECT_NEAR(lr_at(**s, 10), 0.1, kTol);
  EXPECT_NEAR(lr_at(**s, 1000), 0.1, kTol);
  EXPECT_EQ((*s)->type(), "WarmupLR");
}

TEST(WarmupLrTest, LinearWarmupDefaultMaxIsOptimizerLrAndNIsAtLeastTwo) {
  auto s = WarmupLr::create({.warmup_num_steps = 4, .warmup_type = "linear"}, 0.2);
  ASSERT_TRUE(s.ok());
  EXPECT_NEAR(lr_at(**s, 0), 0.0, kTol);
  EXPECT_NEAR(lr_at(**s, 3), 0.2 * 3.0 / 4.0, kTol);  // t = N-1
  EXPECT_NEAR(lr_at(**s, 4), 0.2, kTol);              // t = N
  auto one = WarmupLr::create({.warmup_num_steps = 1, .warmup_type = "linear"}, 0.2);
  ASSERT_TRUE(one.ok());
  EXPECT_NEAR(lr_at(**one, 1), 0.2 * 0.5, kTol);  // N = max(2, 1) = 2
  EXPECT_NEAR(lr_at(**one, 2), 0.2, kTol);
  auto bad = WarmupLr::create({.warmup_num_steps = 0}, 0.1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("warmup_num_steps must be a positive integer, got 0"),
            std::string::npos);
}

TEST(WarmupDecayLrTest, LinearWarmupThenLinearDecayToZeroAtT) {
  auto s = WarmupDecayLr::create(
      {.total_num_steps = 10, .warmup_num_steps = 4, .warmup_type = "linear"});
  ASSERT_TRUE(s.ok());
  const double max = 0.001;                           // DeepSpeed's default warmup_max_lr here
  EXPECT_NEAR(lr_at(**s, 3), max * 3.0 / 4.0, kTol);  // N-1
  EXPECT_NEAR(lr_at(**s, 4), max * (10.0 - 4.0) / 6.0, kTol);  // N: (T-t)/(T-N) = 1
  EXPECT_NEAR(lr_at(**s, 5), max * 5.0 / 6.0, kTol);
  EXPECT_NEAR(lr_at(**s, 9), max * 1.0 / 6.0, kTol);  // T-1
  EXPECT_NEAR(lr_at(**s, 10), 0.0, kTol);             // T
  EXPECT_NEAR(lr_at(**s, 12), 0.0, kTol);             // clamped at 0
  auto missing = WarmupDecayLr::create({});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("WarmupDecayLR: total_num_steps is required"),
            std::string::npos);
}

TEST(WarmupCosineLrTest, RatioWarmupThenCosineToMinRatio) {
  auto s = WarmupCosineLr::create({.total_num_steps = 15,
                                   .warmup_min_ratio = 0.1,
                                   .warmup_num_steps = 5,
                                   .warmup_type = "linear"},
                                  0.1);
  ASSERT_TRUE(s.ok());
  const double cmin = 1e-4;
  EXPECT_NEAR((*s)->get_lr(), 0.0, kTol);  // t = -1
  EXPECT_NEAR(lr_at(**s, 0), 0.1 * 0.1, kTol);
  EXPECT_NEAR(lr_at(**s, 4), 0.1 * (0.1 + 0.9 * 4.0 / 5.0), kTol);  // N-1
  auto cosine = [&](double p) {
    return 0.1 * (cmin + (1 - cmin) * (1 + std::cos(std::numbers::pi * p)) / 2);
  };
  EXPECT_NEAR(lr_at(**s, 5), cosine(1.0 / 10.0), kTol);  // N: (t-N+1)/(T-N)
  EXPECT_NEAR(lr_at(**s, 9), cosine(5.0 / 10.0), kTol);
  EXPECT_NEAR(lr_at(**s, 14), 0.1 * cmin, kTol);  // T-1: p = 1
  EXPECT_NEAR(lr_at(**s, 15), 0.1 * cmin, kTol);  // T: p clamped to 1
  EXPECT_NEAR(lr_at(**s, 40), 0.1 * cmin, kTol);
}

TEST(WarmupCosineLrTest, LogWarmupUsesLnRatio) {
  auto s = WarmupCosineLr::create({.total_num_steps = 100, .warmup_num_steps = 8}, 2.0);
  ASSERT_TRUE(s.ok());
  EXPECT_NEAR(lr_at(**s, 3), 2.0 * std::log(4.0) / std::log(8.0), kTol);
}

TEST(OneCycleTest, TriangularCycleMomentumAndDecay) {
  auto s = OneCycle::create({.cycle_min_lr = 0.01,
                             .cycle_max_lr = 0.1,
                             .decay_lr_rate = 0.5,
                             .cycle_first_step_size = 4,
                             .cycle_second_step_size = 6,
                             .decay_step_size = 2,
                             .decay_mom_rate = 0.1});
  ASSERT_TRUE(s.ok());
  OneCycle& c = **s;
  auto beta1 = [&] { return (*c.get_mom())[0]; };
  EXPECT_NEAR(c.get_lr(), 0.01, kTol);  // t = -1: i = 0, start of the cycle
  EXPECT_NEAR(beta1(), 0.9, kTol);
  EXPECT_NEAR(lr_at(c, 0), 0.01 + 0.09 * 0.25, kTol);  // x = 0.1, f = x / 0.4
  EXPECT_NEAR(beta1(), 0.9 - 0.1 * 0.25, kTol);
  EXPECT_NEAR((*c.get_mom())[1], 0.99, kTol);  // beta2 pinned
  EXPECT_NEAR(lr_at(c, 3), 0.1, kTol);         // peak at i = s1
  EXPECT_NEAR(beta1(), 0.8, kTol);
  EXPECT_NEAR(lr_at(c, 4), 0.01 + 0.09 * (0.5 - 1) / (0.4 - 1), kTol);
  EXPECT_NEAR(lr_at(c, 8), 0.01 + 0.09 * (0.9 - 1) / (0.4 - 1), kTol);
  EXPECT_NEAR(lr_at(c, 9), 0.01, kTol);                         // t = S-1: back to min
  EXPECT_NEAR(lr_at(c, 10), 0.01 / (1 + 0.5 * 1 / 2.0), kTol);  // t = S: decay, d = 1
  EXPECT_NEAR(beta1(), 0.9 * (1 + 0.1 * 1 / 2.0), kTol);
  EXPECT_NEAR(lr_at(c, 13), 0.01 / (1 + 0.5 * 4 / 2.0), kTol);
}

TEST(OneCycleTest, StairsQuantiseEachHalfAndNoDecayHoldsMin) {
  auto s = OneCycle::create({.cycle_min_lr = 0.01,
                             .cycle_max_lr = 0.1,
                             .cycle_first_step_size = 4,
                             .cycle_second_step_size = 6,
                             .cycle_first_stair_count = 2,
                             .cycle_momentum = false});
  ASSERT_TRUE(s.ok());
  OneCycle& c = **s;
  EXPECT_FALSE(c.get_mom().has_value());
  EXPECT_NEAR(lr_at(c, 0), 0.01, kTol);   // floor(1*2/4)/2 = 0
  EXPECT_NEAR(lr_at(c, 1), 0.055, kTol);  // floor(2*2/4)/2 = 0.5
  EXPECT_NEAR(lr_at(c, 3), 0.1, kTol);    // floor(4*2/4)/2 = 1
  EXPECT_NEAR(lr_at(c, 4), 0.055, kTol);  // floor((10-5)*2/6)/2 = 0.5
  EXPECT_NEAR(lr_at(c, 7), 0.01, kTol);   // floor((10-8)*2/6)/2 = 0
  EXPECT_NEAR(lr_at(c, 10), 0.01, kTol);  // after the cycle, no decay
  EXPECT_NEAR(lr_at(c, 100), 0.01, kTol);
  auto missing = OneCycle::create({.cycle_max_lr = 0.1});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cycle_min_lr is required"), std::string::npos);
}

TEST(LrRangeTestTest, ContinuousAndStaircase) {
  auto s = LrRangeTest::create(
      {.lr_range_test_min_lr = 0.01, .lr_range_test_step_size = 5, .lr_range_test_step_rate = 2.0});
  ASSERT_TRUE(s.ok());
  EXPECT_NEAR((*s)->get_lr(), 0.01, kTol);
  EXPECT_NEAR(lr_at(**s, 4), 0.01 * (1 + 2.0 * 1.0), kTol);
  EXPECT_NEAR(lr_at(**s, 6), 0.01 * (1 + 2.0 * 1.4), kTol);
  auto stair = LrRangeTest::create({.lr_range_test_min_lr = 0.01,
                                    .lr_range_test_step_size = 5,
                                    .lr_range_test_step_rate = 2.0,
                                    .lr_range_test_staircase = true});
  ASSERT_TRUE(stair.ok());
  EXPECT_NEAR(lr_at(**stair, 3), 0.01, kTol);
  EXPECT_NEAR(lr_at(**stair, 6), 0.03, kTol);
  EXPECT_FALSE(LrRangeTest::create({.lr_range_test_step_size = 0}).ok());
}

TEST(LrSchedulerTest, FactoryDispatchesAndStateRoundTrips) {
  auto a =
      make_lr_scheduler(WarmupDecayLrOptions{.total_num_steps = 50, .warmup_num_steps = 10}, 0.1);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)->type(), "WarmupDecayLR");
  for (int i = 0; i < 17; ++i) (*a)->step();
  const SchedulerState st = (*a)->state_dict();
  EXPECT_EQ(st.last_batch_iteration, 16);
  auto b =
      make_lr_scheduler(WarmupDecayLrOptions{.total_num_steps = 50, .warmup_num_steps = 10}, 0.1);
  ASSERT_TRUE(b.ok());
  (*b)->load_state_dict(st);
  EXPECT_EQ((*b)->get_lr(), (*a)->get_lr());
  (*b)->step(30);
  EXPECT_NEAR((*b)->get_lr(), 0.001 * 20.0 / 40.0, kTol);
  auto bad = make_lr_scheduler(
      OneCycleOptions{.cycle_min_lr = 0.1, .cycle_max_lr = 1.0, .cycle_first_step_size = 0}, 0.1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cycle_first_step_size"), std::string::npos);
  EXPECT_EQ(parse_warmup_type("cosine"), WarmupType::kLog);  // DeepSpeed: warn, use log
}

TEST(LrSchedulerTest, ApplyLrWritesLrAndOneCycleBetasIntoTheOptimizer) {
  auto adam = Adam::create({});
  auto sgd = Sgd::create({.lr = 0.5});
  ASSERT_TRUE(adam.ok() && sgd.ok());
  auto s =
      OneCycle::create({.cycle_min_lr = 0.01, .cycle_max_lr = 0.1, .cycle_first_step_size = 4});
  ASSERT_TRUE(s.ok());
  (*s)->step(1);  // i = 2 of a 4 + 4 cycle: f = 0.25 / 0.5
  apply_lr(**s, *adam);
  apply_lr(**s, *sgd);
  EXPECT_NEAR(adam->options().lr, 0.01 + 0.09 * 0.5, kTol);
  EXPECT_NEAR(adam->options().betas[0], 0.9 - 0.1 * 0.5, kTol);
  EXPECT_EQ(adam->options().betas[1], 0.99);
  EXPECT_NEAR(sgd->options().lr, 0.055, kTol);
}

}  // namespace
}  // namespace zerotrain::optim
