// The Optimizer interface: state counts and names, updates equal to the
// concrete Adam / Sgd, 16-bit grads and copies, errors, DeepSpeed's
// Adam/AdamW type rule.
#include "optim/optimizer.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/half.h"
#include "optim/lr_scheduler.h"

namespace zerotrain::optim {
namespace {

TEST(OptimizerTest, AdamThroughTheInterfaceEqualsAdamDirectly) {
  auto opt = make_optimizer(AdamOptions{.lr = 0.01, .weight_decay = 0.1});
  ASSERT_TRUE(opt.ok());
  EXPECT_EQ((*opt)->name(), "adamw");
  EXPECT_EQ((*opt)->state_count(), 2);
  EXPECT_EQ((*opt)->state_names(), (std::vector<std::string>{"exp_avg", "exp_avg_sq"}));
  auto direct = Adam::create({.lr = 0.01, .weight_decay = 0.1});
  ASSERT_TRUE(direct.ok());
  std::vector<float> p1 = {1.0f, -2.0f, 0.5f}, p2 = p1, g = {0.1f, 0.2f, -0.3f};
  std::vector<float> m1(3), v1(3), m2(3), v2(3);
  std::vector<BFloat16> copy(3);
  const Tensor states[] = {m1, v1};
  for (int step = 0; step < 3; ++step) {
    (*opt)->begin_step();
    ASSERT_TRUE((*opt)
                    ->update(p1, make_view(std::span<const float>(g)), states,
                             make_view(std::span<BFloat16>(copy)))
                    .ok());
    ASSERT_TRUE(direct->step({p2, g, m2, v2}).ok());
  }
  EXPECT_EQ(p1, p2);
  EXPECT_EQ(copy[1], to_bfloat16(p1[1]));
  EXPECT_EQ((*opt)->step_count(), 3);
  const Tensor one_state[] = {m1};
  const Status bad = (*opt)->update(p1, make_view(std::span<const float>(g)), one_state);
  EXPECT_NE(bad.message().find("adamw: expected 2 state arrays, got 1"), std::string::npos);
}

TEST(OptimizerTest, SgdStatesFollowMomentumAndCopiesAreWritten) {
  auto plain = make_optimizer(SgdOptions{.lr = 0.5});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)->state_count(), 0);
  auto opt = make_optimizer(SgdOptions{.lr = 0.5, .momentum = 0.9});
  ASSERT_TRUE(opt.ok());
  EXPECT_EQ((*opt)->name(), "sgd");
  EXPECT_EQ((*opt)->state_names(), (std::vector<std::string>{"momentum_buffer"}));
  std::vector<float> p = {1.0f}, g = {2.0f}, buf(1);
  std::vector<Half> copy(1);
  const Tensor states[] = {buf};
  (*opt)->begin_step();
  ASSERT_TRUE((*opt)
                  ->update(p, make_view(std::span<const float>(g)), states,
                           make_view(std::span<Half>(copy)))
                  .ok());
  EXPECT_EQ(p[0], 0.0f);  // 1 - 0.5 * 2
  EXPECT_EQ(copy[0], to_half(0.0f));
  std::vector<BFloat16> g16(1);
  const Status s = (*opt)->update(p, make_view(std::span<const BFloat16>(g16)), states);
  EXPECT_NE(s.message().find("sgd: grads must be fp32, got bf16"), std::string::npos);
}

TEST(OptimizerTest, SchedulerDrivesTheInterface) {
  auto opt = make_optimizer(AdamOptions{});
  auto sched =
      OneCycle::create({.cycle_min_lr = 0.1, .cycle_max_lr = 1.0, .cycle_first_step_size = 2});
  ASSERT_TRUE(opt.ok() && sched.ok());
  (*sched)->step(0);  // i = 1 of a 2 + 2 cycle: f = 0.5
  apply_lr(**sched, **opt);
  EXPECT_DOUBLE_EQ((*opt)->lr(), 0.1 + 0.9 * 0.5);
}

TEST(OptimizerTest, DeepSpeedAdamTypeRule) {
  EXPECT_TRUE(effective_adam_w_mode("AdamW", false));
  EXPECT_TRUE(effective_adam_w_mode("Adam", true));
  EXPECT_FALSE(effective_adam_w_mode("Adam", false));
  auto bad = make_optimizer(AdamOptions{.eps = -1.0});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("invalid eps"), std::string::npos);
}

}  // namespace
}  // namespace zerotrain::optim
