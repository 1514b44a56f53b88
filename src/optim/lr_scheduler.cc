// WarmupLR, WarmupDecayLR, WarmupCosineLR and the scheduler factory.
#include "optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/log.h"

namespace zerotrain::optim {
namespace {

Status check_warmup_steps(std::string_view type, int64_t n) {
  if (n <= 0) {
    return invalid_argument(std::string(type) +
                            ": warmup_num_steps must be a positive integer, got " +
                            std::to_string(n));
  }
  return ok_status();
}

Status require_total(std::string_view type, const std::optional<int64_t>& total, int64_t n) {
  if (!total) return invalid_argument(std::string(type) + ": total_num_steps is required");
  if (*total < n) {
    log::warn(type, ": total_num_steps ", *total, " is less than warmup_num_steps ", n);
  }
  return ok_status();
}

// log: ln(t+1)/ln(N); linear: t/N. For 0 <= t < N.
double gamma_for(WarmupType type, int64_t t, int64_t n) {
  if (type == WarmupType::kLinear) return static_cast<double>(t) / static_cast<double>(n);
  return std::log(static_cast<double>(t + 1)) / std::log(static_cast<double>(n));
}

}  // namespace

WarmupType parse_warmup_type(std::string_view name) {
  if (name == "linear") return WarmupType::kLinear;
  if (name != "log") {
    log::warn("Using unknown warmup_type: ", name,
              ". The increasing function is set to default (log)");
  }
  return WarmupType::kLog;
}

StatusOr<std::unique_ptr<WarmupLr>> WarmupLr::create(const WarmupLrOptions& o,
                                                     double optimizer_lr) {
  ZT_RETURN_IF_ERROR(check_warmup_steps("WarmupLR", o.warmup_num_steps));
  const double max_lr = o.warmup_max_lr.value_or(optimizer_lr);
  return std::unique_ptr<WarmupLr>(new WarmupLr(o.warmup_min_lr, max_lr,
                                                std::max<int64_t>(2, o.warmup_num_steps),
                                                parse_warmup_type(o.warmup_type)));
}

double WarmupLr::warmup_gamma() const {
  return gamma_for(warmup_type_, last_batch_iteration_, warmup_num_steps_);
}

double WarmupLr::gamma() const {
  return last_batch_iteration_ < warmup_num_steps_ ? warmup_gamma() : 1.0;
}

double WarmupLr::get_lr() const {
  if (last_batch_iteration_ < 0) return min_lr_;
  return min_lr_ + (max_lr_ - min_lr_) * gamma();
}

StatusOr<std::unique_ptr<WarmupDecayLr>> WarmupDecayLr::create(const WarmupDecayLrOptions& o) {
  ZT_RETURN_IF_ERROR(check_warmup_steps("WarmupDecayLR", o.warmup_num_steps));
  ZT_RETURN_IF_ERROR(require_total("WarmupDecayLR", o.total_num_steps, o.warmup_num_steps));
  return std::unique_ptr<WarmupDecayLr>(new WarmupDecayLr(
      o, std::max<int64_t>(2, o.warmup_num_steps), parse_warmup_type(o.warmup_type)));
}

double WarmupDecayLr::gamma() const {
  const int64_t t = last_batch_iteration_;
  if (t < warmup_num_steps_) return warmup_gamma();
  const double span =
      std::max<double>(1.0, static_cast<double>(total_num_steps_ - warmup_num_steps_));
  return std::max(0.0, static_cast<double>(total_num_steps_ - t) / span);
}

StatusOr<std::unique_ptr<WarmupCosineLr>> WarmupCosineLr::create(const WarmupCosineLrOptions& o,
                                                                 double optimizer_lr) {
  ZT_RETURN_IF_ERROR(check_warmup_steps("WarmupCosineLR", o.warmup_num_steps));
  ZT_RETURN_IF_ERROR(require_total("WarmupCosineLR", o.total_num_steps, o.warmup_num_steps));
  return std::unique_ptr<WarmupCosineLr>(new WarmupCosineLr(
      o, std::max<int64_t>(2, o.warmup_num_steps), parse_warmup_type(o.warmup_type), optimizer_lr));
}

double WarmupCosineLr::get_lr() const {
  const int64_t t = last_batch_iteration_;
  const int64_t n = warmup_num_steps_;
  if (t < 0) return 0.0;
  if (t < n) {
    const double g = gamma_for(warmup_type_, t, n);
    return base_lr_ * (options_.warmup_min_ratio + g * (1.0 - options_.warmup_min_ratio));
  }
  const double real_last_step = static_cast<double>(t - n + 1);
  const double real_total =
      static_cast<double>(std::max<int64_t>(1, *options_.total_num_steps - n));
  const double progress = std::min(1.0, real_last_step / real_total);
  const double cmin = options_.cos_min_ratio;
  const double ratio = (1.0 + std::cos(std::numbers::pi * progress)) / 2.0;
  return base_lr_ * std::max(0.0, cmin + (1.0 - cmin) * ratio);
}

StatusOr<std::unique_ptr<LrScheduler>> make_lr_scheduler(const LrSchedulerOptions& options,
                                                         double optimizer_lr) {
  struct Visitor {
    double lr;
    StatusOr<std::unique_ptr<LrScheduler>> operator()(const WarmupLrOptions& o) const {
      ZT_ASSIGN_OR_RETURN(auto s, WarmupLr::create(o, lr));
      return std::unique_ptr<LrScheduler>(std::move(s));
    }
    StatusOr<std::unique_ptr<LrScheduler>> operator()(const WarmupDecayLrOptions& o) const {
      ZT_ASSIGN_OR_RETURN(auto s, WarmupDecayLr::create(o));
      return std::unique_ptr<LrScheduler>(std::move(s));
    }
    StatusOr<std::unique_ptr<LrScheduler>> operator()(const WarmupCosineLrOptions& o) const {
      ZT_ASSIGN_OR_RETURN(auto s, WarmupCosineLr::create(o, lr));
      return std::unique_ptr<LrScheduler>(std::move(s));
    }
    StatusOr<std::unique_ptr<LrScheduler>> operator()(const OneCycleOptions& o) const {
      ZT_ASSIGN_OR_RETURN(auto s, OneCycle::create(o));
      return std::unique_ptr<LrScheduler>(std::move(s));
    }
    StatusOr<std::unique_ptr<LrScheduler>> operator()(const LrRangeTestOptions& o) const {
      ZT_ASSIGN_OR_RETURN(auto s, LrRangeTest::create(o));
      return std::unique_ptr<LrScheduler>(std::move(s));
    }
  };
  return std::visit(Visitor{optimizer_lr}, options);
}

}  // namespace zerotrain::optim
