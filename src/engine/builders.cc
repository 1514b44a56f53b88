// ds_config optimizer/scheduler sections -> optim options.
#include "engine/builders.h"

#include <string>

namespace zerotrain::engine {

StatusOr<optim::OptimizerOptions> optimizer_options(const config::OptimizerConfig& c) {
  switch (c.type) {
    case config::OptimizerType::kAdam:
    case config::OptimizerType::kAdamW:
      return optim::OptimizerOptions(optim::AdamOptions{.lr = c.lr,
                                                        .betas = c.betas,
                                                        .eps = c.eps,
                                                        .weight_decay = c.weight_decay,
                                                        .bias_correction = c.bias_correction,
                                                        .adam_w_mode = c.decoupled_weight_decay()});
    case config::OptimizerType::kSgd:
      return optim::OptimizerOptions(optim::SgdOptions{.lr = c.lr,
                                                       .momentum = c.momentum,
                                                       .dampening = c.dampening,
                                                       .weight_decay = c.weight_decay,
                                                       .nesterov = c.nesterov});
    case config::OptimizerType::kNone:
      break;
  }
  return invalid_argument(
      "optimizer: the config has no optimizer section; the engine needs one, e.g. "
      "\"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 3e-4}}");
}

namespace {

std::string warmup_name(config::WarmupType t) {
  return t == config::WarmupType::kLinear ? "linear" : "log";
}

optim::LrSchedulerOptions scheduler_options(const config::SchedulerConfig& c) {
  switch (c.type) {
    case config::SchedulerType::kWarmupLR:
      return optim::WarmupLrOptions{.warmup_min_lr = c.warmup_min_lr,
                                    .warmup_max_lr = c.warmup_max_lr,
                                    .warmup_num_steps = c.warmup_num_steps,
                                    .warmup_type = warmup_name(c.warmup_type)};
    case config::SchedulerType::kWarmupDecayLR:
      return optim::WarmupDecayLrOptions{.total_num_steps = c.total_num_steps,
                                         .warmup_min_lr = c.warmup_min_lr,
                                         .warmup_max_lr = c.warmup_max_lr,
                                         .warmup_num_steps = c.warmup_num_steps,
                                         .warmup_type = warmup_name(c.warmup_type)};
    case config::SchedulerType::kWarmupCosineLR:
      return optim::WarmupCosineLrOptions{.total_num_steps = c.total_num_steps,
                                          .warmup_min_ratio = c.warmup_min_ratio,
                                          .warmup_num_steps = c.warmup_num_steps,
                                          .cos_min_ratio = c.cos_min_ratio,
                                          .warmup_type = warmup_name(c.warmup_type)};
    case config::SchedulerType::kOneCycle:
      return optim::OneCycleOptions{.cycle_min_lr = c.cycle_min_lr,
                                    .cycle_max_lr = c.cycle_max_lr,
                                    .decay_lr_rate = c.decay_lr_rate,
                                    .cycle_first_step_size = c.cycle_first_step_size,
                                    .cycle_second_step_size = c.cycle_second_step_size,
                                    .cycle_first_stair_count = c.cycle_first_stair_count,
                                    .cycle_second_stair_count = c.cycle_second_stair_count,
                                    .decay_step_size = c.decay_step_size,
                                    .cycle_momentum = c.cycle_momentum,
                                    .cycle_min_mom = c.cycle_min_mom,
                                    .cycle_max_mom = c.cycle_max_mom,
                                    .decay_mom_rate = c.decay_mom_rate};
    case config::SchedulerType::kLRRangeTest:
    case config::SchedulerType::kNone:
      break;
  }
  return optim::LrRangeTestOptions{.lr_range_test_min_lr = c.lr_range_test_min_lr,
                                   .lr_range_test_step_size = c.lr_range_test_step_size,
                                   .lr_range_test_step_rate = c.lr_range_test_step_rate,
                                   .lr_range_test_staircase = c.lr_range_test_staircase};
}

}  // namespace

StatusOr<std::unique_ptr<optim::LrScheduler>> make_scheduler(const config::SchedulerConfig& c,
                                                             double optimizer_lr) {
  if (c.type == config::SchedulerType::kNone) return std::unique_ptr<optim::LrScheduler>();
  return optim::make_lr_scheduler(scheduler_options(c), optimizer_lr);
}

}  // namespace zerotrain::engine
