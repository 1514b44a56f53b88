// Dynamic, static and no-op loss scalers.
#include "optim/loss_scaler.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/log.h"

namespace zerotrain::optim {
namespace {

constexpr double kScaleFactor = 2.0;

Status bad(const std::string& what) { return invalid_argument("fp16: " + what); }

Status validate_dynamic(const LossScalerOptions& o) {
  if (o.loss_scale_window <= 0) {
    return bad("loss_scale_window must be > 0 when dynamic, got " +
               std::to_string(o.loss_scale_window));
  }
  if (!(o.min_loss_scale > 0) || !std::isfinite(o.min_loss_scale)) {
    return bad("min_loss_scale must be > 0 when dynamic, got " + std::to_string(o.min_loss_scale));
  }
  if (o.hysteresis < 1) return bad("hysteresis must be >= 1, got " + std::to_string(o.hysteresis));
  if (!std::isfinite(std::ldexp(1.0, o.initial_scale_power))) {
    return bad("initial_scale_power " + std::to_string(o.initial_scale_power) + " overflows");
  }
  return ok_status();
}

}  // namespace

DynamicLossScaler::DynamicLossScaler(const LossScalerOptions& o) : options_(o) {
  state_.cur_scale = std::ldexp(1.0, o.initial_scale_power);
  state_.cur_iter = 0;
  state_.last_overflow_iter = -1;
  state_.cur_hysteresis = o.hysteresis;
}

StatusOr<std::unique_ptr<DynamicLossScaler>> DynamicLossScaler::create(const LossScalerOptions& o) {
  ZT_RETURN_IF_ERROR(validate_dynamic(o));
  return std::unique_ptr<DynamicLossScaler>(new DynamicLossScaler(o));
}

StatusOr<bool> DynamicLossScaler::update(bool overflow) {
  LossScalerState& s = state_;
  if (overflow) {
    if (options_.hysteresis == 1 || s.cur_hysteresis == 1) {
      if (s.cur_scale == options_.min_loss_scale) {
        return internal_error(
            "Current loss scale already at minimum - cannot decrease scale anymore. Exiting run. "
            "(loss scale " +
            std::to_string(s.cur_scale) + " == fp16.min_loss_scale after " +
            std::to_string(s.cur_iter) + " steps)");
      }
      const double next = std::max(s.cur_scale / kScaleFactor, options_.min_loss_scale);
      if (options_.log_overflows) {
        log::info("OVERFLOW! Skipping step. Attempted loss scale: ", s.cur_scale,
                  ", reducing to ", next);
      }
      s.cur_scale = next;
    } else {
      if (options_.log_overflows) {
        log::info("OVERFLOW! Skipping step. Attempted loss scale: ", s.cur_scale,
                  ", but hysteresis is ", s.cur_hysteresis, ". Reducing hysteresis to ",
                  s.cur_hysteresis - 1);
      }
      --s.cur_hysteresis;
    }
    s.last_overflow_iter = s.cur_iter;
  } else {
    if (options_.consecutive_hysteresis) s.cur_hysteresis = options_.hysteresis;
    const int64_t stable = s.cur_iter - s.last_overflow_iter - 1;
    if (stable > 0 && stable % options_.loss_scale_window == 0) {
      if (!options_.consecutive_hysteresis) s.cur_hysteresis = options_.hysteresis;
      s.cur_scale *= kScaleFactor;
    }
  }
  ++s.cur_iter;
  return overflow;
}

Status DynamicLossScaler::load_state(const LossScalerState& state) {
  if (!(state.cur_scale > 0) || !std::isfinite(state.cur_scale) || state.cur_iter < 0 ||
      state.last_overflow_iter < -1 || state.last_overflow_iter >= state.cur_iter ||
      state.cur_hysteresis < 0) {
    return invalid_argument("loss scaler state is not valid (cur_scale " +
                            std::to_string(state.cur_scale) + ", cur_iter " +
                            std::to_string(state.cur_iter) + ")");
  }
  state_ = state;
  return ok_status();
}

Status StaticLossScaler::load_state(const LossScalerState& state) {
  if (state.cur_scale != scale_) {
    return invalid_argument("checkpoint loss scale " + std::to_string(state.cur_scale) +
                            " differs from the configured static fp16.loss_scale " +
                            std::to_string(scale_));
  }
  return ok_status();
}

Status NoLossScaler::load_state(const LossScalerState& state) { return ok_status(); }

StatusOr<std::unique_ptr<LossScaler>> make_loss_scaler(const LossScalerOptions& o) {
  if (!std::isfinite(o.loss_scale) || o.loss_scale < 0) {
    return bad("loss_scale must be finite and >= 0 (0 = dynamic), got " +
               std::to_string(o.loss_scale));
  }
  if (o.loss_scale > 0) return std::unique_ptr<LossScaler>(new StaticLossScaler(o.loss_scale));
  ZT_ASSIGN_OR_RETURN(auto dynamic, DynamicLossScaler::create(o));
  return std::unique_ptr<LossScaler>(std::move(dynamic));
}

}  // namespace zerotrain::optim
