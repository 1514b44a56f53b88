// OneCycle and LRRangeTest (DeepSpeed runtime/lr_schedules.py).
//
// OneCycle, with i = t + 1, S = s1 + s2, ratio = s1 / S:
//   x = 1 + i/S - floor(1 + i/S)
//   f = x / ratio            if x <= ratio (rising)
//     = (x - 1)/(ratio - 1)  otherwise     (falling)
//   with stairs k > 0 in that half: c = i mod S,
//     f = floor(c k / s1) / k  (c <= s1)  or  floor((S - c) k / s2) / k
//   lr = min + (max - min) f;  beta1 = max_mom - (max_mom - min_mom) f; beta2 = 0.99
//   after the cycle (t >= S), d = t - S + 1:
//     lr = min / (1 + decay_lr_rate d / decay_step_size)     (else min)
//     beta1 = max_mom (1 + decay_mom_rate d / decay_step_size) (else max_mom)
#include <cmath>
#include <string>

#include "optim/lr_scheduler.h"

namespace zerotrain::optim {
namespace {

constexpr double kPinnedBeta2 = 0.99;  // DeepSpeed hard-codes it

Status bad(const std::string& what) { return invalid_argument("OneCycle: " + what); }

}  // namespace

OneCycle::OneCycle(const OneCycleOptions& o) : o_(o) {
  first_ = static_cast<double>(o.cycle_first_step_size);
  second_ = static_cast<double>(o.cycle_second_step_size.value_or(o.cycle_first_step_size));
  total_ = first_ + second_;
  step_ratio_ = first_ / total_;
  first_stairs_ = o.cycle_first_stair_count;
  second_stairs_ = o.cycle_second_stair_count.value_or(o.cycle_first_stair_count);
  skip_lr_decay_ = o.decay_step_size == 0 || o.decay_lr_rate == 0.0;
  skip_mom_decay_ = o.decay_step_size == 0 || o.decay_mom_rate == 0.0;
}

StatusOr<std::unique_ptr<OneCycle>> OneCycle::create(const OneCycleOptions& o) {
  if (!o.cycle_min_lr) return bad("cycle_min_lr is required");
  if (!o.cycle_max_lr) return bad("cycle_max_lr is required");
  if (o.cycle_first_step_size <= 0) {
    return bad("cycle_first_step_size must be positive, got " +
               std::to_string(o.cycle_first_step_size));
  }
  if (o.cycle_second_step_size && *o.cycle_second_step_size <= 0) {
    return bad("cycle_second_step_size must be positive, got " +
               std::to_string(*o.cycle_second_step_size));
  }
  if (o.cycle_first_stair_count < 0 || o.cycle_second_stair_count.value_or(0) < 0) {
    return bad("stair counts must be >= 0");
  }
  if (o.decay_step_size < 0) return bad("decay_step_size must be >= 0");
  return std::unique_ptr<OneCycle>(new OneCycle(o));
}

double OneCycle::scale_factor() const {
  const double i = static_cast<double>(last_batch_iteration_ + 1);
  const double cycle = std::floor(1.0 + i / total_);
  const double x = 1.0 + i / total_ - cycle;
  double f;
  int64_t stairs;
  if (x <= step_ratio_) {
    f = x / step_ratio_;
    stairs = first_stairs_;
  } else {
    f = (x - 1.0) / (step_ratio_ - 1.0);
    stairs = second_stairs_;
  }
  if (stairs > 0) {
    // Quantise from the integer offset, not from f: f can land 1e-16 under
    // a stair at a half-cycle boundary (DeepSpeed does the same).
    const double c = std::fmod(i, total_);
    const double k = static_cast<double>(stairs);
    const double position = c <= first_ ? c * k / first_ : (total_ - c) * k / second_;
    f = std::floor(position) / k;
  }
  return f;
}

double OneCycle::get_lr() const {
  const double min_lr = *o_.cycle_min_lr;
  if (static_cast<double>(last_batch_iteration_) < total_) {
    return min_lr + (*o_.cycle_max_lr - min_lr) * scale_factor();
  }
  if (skip_lr_decay_) return min_lr;
  const double d = static_cast<double>(last_batch_iteration_) - total_ + 1.0;
  return min_lr / (1.0 + o_.decay_lr_rate * d / static_cast<double>(o_.decay_step_size));
}

std::optional<std::array<double, 2>> OneCycle::get_mom() const {
  if (!o_.cycle_momentum) return std::nullopt;
  if (static_cast<double>(last_batch_iteration_) < total_) {
    const double beta1 = o_.cycle_max_mom - (o_.cycle_max_mom - o_.cycle_min_mom) * scale_factor();
    return std::array<double, 2>{beta1, kPinnedBeta2};
  }
  if (skip_mom_decay_) return std::array<double, 2>{o_.cycle_max_mom, kPinnedBeta2};
  const double d = static_cast<double>(last_batch_iteration_) - total_ + 1.0;
  const double factor = 1.0 + o_.decay_mom_rate * d / static_cast<double>(o_.decay_step_size);
  return std::array<double, 2>{o_.cycle_max_mom * factor, kPinnedBeta2};
}

StatusOr<std::unique_ptr<LrRangeTest>> LrRangeTest::create(const LrRangeTestOptions& o) {
  if (o.lr_range_test_step_size <= 0) {
    return invalid_argument("LRRangeTest: lr_range_test_step_size must be positive, got " +
                            std::to_string(o.lr_range_test_step_size));
  }
  return std::unique_ptr<LrRangeTest>(new LrRangeTest(o));
}

double LrRangeTest::get_lr() const {
  double k = static_cast<double>(last_batch_iteration_ + 1) /
             static_cast<double>(o_.lr_range_test_step_size);
  if (o_.lr_range_test_staircase) k = std::floor(k);
  return o_.lr_range_test_min_lr * (1.0 + o_.lr_range_test_step_rate * k);
}

}  // namespace zerotrain::optim
