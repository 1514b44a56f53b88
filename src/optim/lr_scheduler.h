// Learning-rate schedulers with DeepSpeed's names, parameters, defaults and
// formulas (DeepSpeed's runtime/lr_schedules.py): WarmupLR,
// WarmupDecayLR, WarmupCosineLR, OneCycle, LRRangeTest.
//
// t = last_batch_iteration() starts at -1; step() is called once per
// successful optimizer step (not on skipped fp16 overflow steps) and makes
// it 0, 1, ... get_lr() is the lr for the current t; the caller writes it
// into the optimizer after construction and after each step(), as
// DeepSpeed's update_lr does. OneCycle also returns betas from get_mom().
//
//   ZT_ASSIGN_OR_RETURN(auto sched, make_lr_scheduler(
//       WarmupDecayLrOptions{.total_num_steps = 10000, .warmup_num_steps = 100},
//       adam.options().lr));
//   apply_lr(*sched, adam);
//   ... after each optimizer step that was not skipped:
//   sched->step();  apply_lr(*sched, adam);
//
// Thread-safety: not synchronised; one owner (the engine) drives it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "core/status.h"

namespace zerotrain::optim {

// What a checkpoint stores (DeepSpeed's state_dict).
struct SchedulerState {
  int64_t last_batch_iteration = -1;
};

class LrScheduler {
 public:
  virtual ~LrScheduler() = default;
  // Advances t by one, or sets it (DeepSpeed's step(batch_iteration)).
  void step() { ++last_batch_iteration_; }
  void step(int64_t batch_iteration) { last_batch_iteration_ = batch_iteration; }
  virtual double get_lr() const = 0;
  // (beta1, beta2) to set on the optimizer, for schedulers that cycle them.
  virtual std::optional<std::array<double, 2>> get_mom() const { return std::nullopt; }
  virtual std::string_view type() const = 0;  // DeepSpeed's "type" name
  int64_t last_batch_iteration() const { return last_batch_iteration_; }
  SchedulerState state_dict() const { return {last_batch_iteration_}; }
  void load_state_dict(const SchedulerState& s) { last_batch_iteration_ = s.last_batch_iteration; }

 protected:
  int64_t last_batch_iteration_ = -1;
};

struct WarmupLrOptions {
  double warmup_min_lr = 0.0;
  std::optional<double> warmup_max_lr = std::nullopt;  // unset: the optimizer's lr
  int64_t warmup_num_steps = 1000;                     // > 0; N = max(2, this)
  std::string warmup_type = "log";                     // "log" | "linear"; other: warning, log
};

struct WarmupDecayLrOptions {
  std::optional<int64_t> total_num_steps = std::nullopt;  // required
  double warmup_min_lr = 0.0;
  double warmup_max_lr = 0.001;
  int64_t warmup_num_steps = 1000;
  std::string warmup_type = "log";
};

struct WarmupCosineLrOptions {
  std::optional<int64_t> total_num_steps = std::nullopt;  // required
  double warmup_min_ratio = 0.0;
  int64_t warmup_num_steps = 1000;
  double cos_min_ratio = 0.0001;
  std::string warmup_type = "log";
};

struct OneCycleOptions {
  std::optional<double> cycle_min_lr = std::nullopt;  // required
  std::optional<double> cycle_max_lr = std::nullopt;  // required
  double decay_lr_rate = 0.0;
  int64_t cycle_first_step_size = 2000;
  std::optional<int64_t> cycle_second_step_size = std::nullopt;  // unset: first
  int64_t cycle_first_stair_count = 0;
  std::optional<int64_t> cycle_second_stair_count = std::nullopt;  // unset: first
  int64_t decay_step_size = 0;
  bool cycle_momentum = true;
  double cycle_min_mom = 0.8;
  double cycle_max_mom = 0.9;
  double decay_mom_rate = 0.0;
};

struct LrRangeTestOptions {
  double lr_range_test_min_lr = 1e-3;
  int64_t lr_range_test_step_size = 2000;
  double lr_range_test_step_rate = 1.0;
  bool lr_range_test_staircase = false;
};

enum class WarmupType { kLog, kLinear };

// lr = min + (max - min) * gamma; gamma = ln(t+1)/ln(N) or t/N for t < N,
// 1 after; t < 0 gives min.
class WarmupLr : public LrScheduler {
 public:
  static StatusOr<std::unique_ptr<WarmupLr>> create(const WarmupLrOptions& o, double optimizer_lr);
  double get_lr() const override;
  std::string_view type() const override { return "WarmupLR"; }

 protected:
  WarmupLr(double min_lr, double max_lr, int64_t n, WarmupType type)
      : min_lr_(min_lr), max_lr_(max_lr), warmup_num_steps_(n), warmup_type_(type) {}
  double warmup_gamma() const;  // requires 0 <= t < N
  virtual double gamma() const;
  double min_lr_, max_lr_;
  int64_t warmup_num_steps_;  // already max(2, N)
  WarmupType warmup_type_;
};

// Warmup as WarmupLR, then gamma = max(0, (T - t) / max(1, T - N)).
class WarmupDecayLr : public WarmupLr {
 public:
  static StatusOr<std::unique_ptr<WarmupDecayLr>> create(const WarmupDecayLrOptions& o);
  std::string_view type() const override { return "WarmupDecayLR"; }

 private:
  WarmupDecayLr(const WarmupDecayLrOptions& o, int64_t n, WarmupType type)
      : WarmupLr(o.warmup_min_lr, o.warmup_max_lr, n, type), total_num_steps_(*o.total_num_steps) {}
  double gamma() const override;
  int64_t total_num_steps_;
};

// lr = optimizer lr * ratio; warmup r = wmin + gamma * (1 - wmin); then
// p = min(1, (t - N + 1) / max(1, T - N)), r = max(0, cmin + (1 - cmin)(1 + cos(pi p))/2).
class WarmupCosineLr : public LrScheduler {
 public:
  static StatusOr<std::unique_ptr<WarmupCosineLr>> create(const WarmupCosineLrOptions& o,
                                                          double optimizer_lr);
  double get_lr() const override;
  std::string_view type() const override { return "WarmupCosineLR"; }

 private:
  WarmupCosineLr(const WarmupCosineLrOptions& o, int64_t n, WarmupType type, double base_lr)
      : options_(o), warmup_num_steps_(n), warmup_type_(type), base_lr_(base_lr) {}
  WarmupCosineLrOptions options_;
  int64_t warmup_num_steps_;
  WarmupType warmup_type_;
  double base_lr_;
};

// Triangular lr (and inverse beta1) cycle, then optional decay. See
// one_cycle.cc for the formula; beta2 is pinned to 0.99 as DeepSpeed does.
class OneCycle : public LrScheduler {
 public:
  static StatusOr<std::unique_ptr<OneCycle>> create(const OneCycleOptions& o);
  double get_lr() const override;
  std::optional<std::array<double, 2>> get_mom() const override;
  std::string_view type() const override { return "OneCycle"; }

 private:
  explicit OneCycle(const OneCycleOptions& o);
  double scale_factor() const;
  OneCycleOptions o_;
  double first_, second_, total_, step_ratio_;
  int64_t first_stairs_, second_stairs_;
  bool skip_lr_decay_, skip_mom_decay_;
};

// lr = min * (1 + rate * k), k = (t + 1) / size (floored if staircase).
class LrRangeTest : public LrScheduler {
 public:
  static StatusOr<std::unique_ptr<LrRangeTest>> create(const LrRangeTestOptions& o);
  double get_lr() const override;
  std::string_view type() const override { return "LRRangeTest"; }

 private:
  explicit LrRangeTest(const LrRangeTestOptions& o) : o_(o) {}
  LrRangeTestOptions o_;
};

using LrSchedulerOptions = std::variant<WarmupLrOptions, WarmupDecayLrOptions,
                                        WarmupCosineLrOptions, OneCycleOptions, LrRangeTestOptions>;

// Builds the scheduler for the options' type. optimizer_lr is the lr the
// optimizer was configured with (WarmupLR's default max, WarmupCosineLR's
// base). InvalidArgument names the scheduler and parameter.
StatusOr<std::unique_ptr<LrScheduler>> make_lr_scheduler(const LrSchedulerOptions& options,
                                                         double optimizer_lr);

// Writes the scheduler's lr (and betas, if it cycles them and the optimizer
// has set_betas) into an optimizer: what DeepSpeed's update_lr does after
// construction and after each step(). Works with Adam and Sgd (Sgd has no
// betas, so momentum cycling is ignored for it, as DeepSpeed disables it).
template <typename Optimizer>
void apply_lr(const LrScheduler& scheduler, Optimizer& optimizer) {
  optimizer.set_lr(scheduler.get_lr());
  if constexpr (requires { optimizer.set_betas(0.0, 0.0); }) {
    if (const auto betas = scheduler.get_mom()) optimizer.set_betas((*betas)[0], (*betas)[1]);
  }
}

// "log" -> kLog, "linear" -> kLinear; anything else logs a warning and is
// kLog, as DeepSpeed does.
WarmupType parse_warmup_type(std::string_view name);

}  // namespace zerotrain::optim
