// Mixed-precision helpers: the config's loss scaler. (Rounding fp32 values
// through bf16/fp16 is zero::round_to, partition_array.h.)
//
//   ZT_ASSIGN_OR_RETURN(auto scaler, make_scaler(config, /*log_overflows=*/true));
//
// Thread-safety: pure functions.
#pragma once

#include <memory>

#include "config/config.h"
#include "core/status.h"
#include "optim/loss_scaler.h"

namespace zerotrain::engine {

// The scaler of a config: fp16 -> dynamic (loss_scale 0) or static; bf16 ->
// none, skipping on overflow iff bf16.check_grad_overflow; fp32 -> none,
// skipping on overflow (as DeepSpeed's ZeRO optimizer does for every dtype).
StatusOr<std::unique_ptr<optim::LossScaler>> make_scaler(const config::Config& config,
                                                         bool log_overflows);

}  // namespace zerotrain::engine
