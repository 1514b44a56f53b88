// The config's loss scaler.
#include "engine/precision.h"

namespace zerotrain::engine {

StatusOr<std::unique_ptr<optim::LossScaler>> make_scaler(const config::Config& config,
                                                         bool log_overflows) {
  if (config.fp16.enabled) {
    const config::Fp16Config& f = config.fp16;
    optim::LossScalerOptions o;
    o.loss_scale = f.loss_scale;
    o.initial_scale_power = static_cast<int>(f.initial_scale_power);
    o.loss_scale_window = static_cast<int>(f.loss_scale_window);
    o.hysteresis = static_cast<int>(f.hysteresis);
    o.consecutive_hysteresis = f.consecutive_hysteresis;
    o.min_loss_scale = f.min_loss_scale;
    o.log_overflows = log_overflows;
    return optim::make_loss_scaler(o);
  }
  const bool check = config.bf16.enabled ? config.bf16.check_grad_overflow : true;
  return std::unique_ptr<optim::LossScaler>(std::make_unique<optim::NoLossScaler>(check));
}

}  // namespace zerotrain::engine
