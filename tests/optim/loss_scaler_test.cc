// Loss scalers: the exact DeepSpeed state sequence for a scripted overflow
// pattern (hysteresis 2, window 3, down to the minimum and the error there),
// defaults, consecutive hysteresis, static/no-op scalers, validation.
#include "optim/loss_scaler.h"

#include <gtest/gtest.h>

#include <vector>

namespace zerotrain::optim {
namespace {

struct Expect {
  bool overflow;
  LossScalerState after;  // cur_scale, cur_iter, last_overflow_iter, cur_hysteresis
};

TEST(DynamicLossScalerTest, ScriptedOverflowPatternFollowsDeepSpeedExactly) {
  auto s = DynamicLossScaler::create({.initial_scale_power = 2,
                                      .loss_scale_window = 3,
                                      .hysteresis = 2,
                                      .min_loss_scale = 1.0,
                                      .log_overflows = false});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->state(), (LossScalerState{4.0, 0, -1, 2}));
  const std::vector<Expect> script = {
      {true, {4, 1, 0, 1}},   // hysteresis absorbs the first overflow
      {false, {4, 2, 0, 1}},  // stable = 0
      {true, {2, 3, 2, 1}},   // hysteresis used up: halve
      {false, {2, 4, 2, 1}}, {false, {2, 5, 2, 1}}, {false, {2, 6, 2, 1}},
      {false, {4, 7, 2, 2}},  // 3 clean steps since the overflow: double, refill
      {true, {4, 8, 7, 1}},  {true, {2, 9, 8, 1}},  {true, {1, 10, 9, 1}},  // reach min
  };
  for (size_t i = 0; i < script.size(); ++i) {
    auto skip = (*s)->update(script[i].overflow);
    ASSERT_TRUE(skip.ok()) << i;
    EXPECT_EQ(*skip, script[i].overflow) << i;
    EXPECT_EQ((*s)->state(), script[i].after) << "after update " << i;
  }
  // Overflow at the minimum: DeepSpeed raises; we return an error, state kept.
  auto at_min = (*s)->update(true);
  ASSERT_FALSE(at_min.ok());
  EXPECT_NE(at_min.status().message().find("Current loss scale already at minimum"),
            std::string::npos);
  EXPECT_EQ((*s)->state(), (LossScalerState{1, 10, 9, 1}));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*s)->update(false).ok());
  EXPECT_EQ((*s)->state(), (LossScalerState{1, 13, 9, 1}));
  ASSERT_TRUE((*s)->update(false).ok());
  EXPECT_EQ((*s)->state(), (LossScalerState{2, 14, 9, 2}));
}

TEST(DynamicLossScalerTest, DefaultsStartAt2To16AndFirstDoubleIsOn1001stCleanStep) {
  auto s = make_loss_scaler({});
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE((*s)->dynamic());
  EXPECT_EQ((*s)->loss_scale(), 65536.0);
  for (int i = 0; i < 1000; ++i) ASSERT_FALSE(*(*s)->update(false));
  EXPECT_EQ((*s)->loss_scale(), 65536.0);
  ASSERT_FALSE(*(*s)->update(false));
  EXPECT_EQ((*s)->loss_scale(), 131072.0);
}

TEST(DynamicLossScalerTest, ConsecutiveHysteresisRefillsOnEveryCleanStep) {
  auto s = DynamicLossScaler::create({.initial_scale_power = 4,
                                      .hysteresis = 2,
                                      .consecutive_hysteresis = true,
                                      .log_overflows = false});
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->update(true).ok());
  EXPECT_EQ((*s)->state(), (LossScalerState{16, 1, 0, 1}));
  ASSERT_TRUE((*s)->update(false).ok());  // refilled
  EXPECT_EQ((*s)->state(), (LossScalerState{16, 2, 0, 2}));
  ASSERT_TRUE((*s)->update(true).ok());  // absorbed again, no halving
  EXPECT_EQ((*s)->loss_scale(), 16.0);
  ASSERT_TRUE((*s)->update(true).ok());
  EXPECT_EQ((*s)->state(), (LossScalerState{8, 4, 3, 1}));
}

TEST(DynamicLossScalerTest, HysteresisOneHalvesImmediatelyAndNeverBelowMin) {
  auto s = DynamicLossScaler::create(
      {.initial_scale_power = 2, .hysteresis = 1, .min_loss_scale = 3.0, .log_overflows = false});
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->update(true).ok());
  EXPECT_EQ((*s)->loss_scale(), 3.0);  // max(4 / 2, 3)
  EXPECT_FALSE((*s)->update(true).ok());
}

TEST(DynamicLossScalerTest, StateRoundTripsForCheckpoints) {
  auto a = DynamicLossScaler::create({.log_overflows = false});
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE((*a)->update(true).ok());
  ASSERT_TRUE((*a)->update(false).ok());
  auto b = DynamicLossScaler::create({.log_overflows = false});
  ASSERT_TRUE((*b)->load_state((*a)->state()).ok());
  EXPECT_EQ((*b)->state(), (*a)->state());
  EXPECT_FALSE((*b)->load_state({-1.0, 0, -1, 2}).ok());
  EXPECT_FALSE((*b)->load_state({2.0, 3, 3, 2}).ok());  // overflow iter must be < cur_iter
}

TEST(LossScalerTest, StaticAndNoOpScalers) {
  auto st = make_loss_scaler({.loss_scale = 128.0});
  ASSERT_TRUE(st.ok());
  EXPECT_FALSE((*st)->dynamic());
  EXPECT_EQ((*st)->loss_scale(), 128.0);
  EXPECT_TRUE(*(*st)->update(true));  // overflow still skips the step
  EXPECT_EQ((*st)->loss_scale(), 128.0);
  EXPECT_FALSE(*(*st)->update(false));
  EXPECT_FALSE((*st)->load_state({64.0, 0, -1, 0}).ok());

  NoLossScaler bf16;
  EXPECT_EQ(bf16.loss_scale(), 1.0);
  EXPECT_TRUE(*bf16.update(true));  // check_grad_overflow defaults to true
  NoLossScaler unchecked(false);
  EXPECT_FALSE(*unchecked.update(true));
}

TEST(LossScalerTest, ValidationNamesTheKey) {
  auto neg = make_loss_scaler({.loss_scale = -1.0});
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("fp16: loss_scale must be finite and >= 0"),
            std::string::npos);
  auto window = make_loss_scaler({.loss_scale_window = 0});
  ASSERT_FALSE(window.ok());
  EXPECT_NE(window.status().message().find("loss_scale_window must be > 0"), std::string::npos);
  auto min = make_loss_scaler({.min_loss_scale = 0.0});
  EXPECT_NE(min.status().message().find("min_loss_scale"), std::string::npos);
  auto hyst = make_loss_scaler({.hysteresis = 0});
  EXPECT_NE(hyst.status().message().find("hysteresis must be >= 1"), std::string::npos);
  EXPECT_TRUE(make_loss_scaler({.loss_scale = 8.0, .loss_scale_window = 0}).ok());  // static
}

}  // namespace
}  // namespace zerotrain::optim
