// Mixed-precision helpers: rounding fp32 values through bf16/fp16 (values
// exactly representable in the 16-bit type, kept as float) — the engine
// rounds fp16 gradients through fp16 at the boundary, so a loss-scaled
// gradient beyond the fp16 range (65504) overflows to inf as it would in
// real fp16 and the dynamic loss scaler sees it — and the config's loss
// scaler.
//
//   round_through(config::DType::kBf16, master, model_params);  // out = bf16(in)
//   round_through_in_place(config::DType::kFp16, grads);
//
// Thread-safety: pure functions over caller memory; OpenMP inside.
#pragma once

#include <memory>
#include <span>

#include "common/status.h"
#include "config/config.h"
#include "optim/loss_scaler.h"

namespace zerotrain::engine {

// out[i] = float(dtype(in[i])) (round to nearest even); a plain copy for
// fp32. in and out have the same length (checked) and may be the same.
void round_through(config::DType dtype, std::span<const float> in, std::span<float> out);
inline void round_through_in_place(config::DType dtype, std::span<float> x) {
  round_through(dtype, x, x);
}

// The scaler of a config: fp16 -> dynamic (loss_scale 0) or static; bf16 ->
// none, skipping on overflow iff bf16.check_grad_overflow; fp32 -> none,
// skipping on overflow (as DeepSpeed's ZeRO optimizer does for every dtype).
StatusOr<std::unique_ptr<optim::LossScaler>> make_scaler(const config::Config& config,
                                                         bool log_overflows);

}  // namespace zerotrain::engine
