// Loss scalers for mixed precision (DeepSpeed's
// runtime/fp16/loss_scaler.py):
//   DynamicLossScaler  fp16 with loss_scale == 0: start at
//                      2^initial_scale_power; an overflow skips the step and,
//                      once hysteresis is used up, halves the scale (not
//                      below min_loss_scale); every loss_scale_window clean
//                      steps since the last overflow doubles it.
//   StaticLossScaler   fp16 with loss_scale > 0: fixed scale; an overflow
//                      still skips the step.
//   NoLossScaler       bf16/fp32: scale 1; an overflow skips the step only if
//                      check_grad_overflow (bf16's default true).
// update(overflow) is called once per optimizer step (at the accumulation
// boundary) with the overflow flag already max-reduced over all ranks; it
// returns whether that step must be skipped.
//
//   ZT_ASSIGN_OR_RETURN(auto scaler, make_loss_scaler(LossScalerOptions{}));
//   loss *= scaler->loss_scale();  ... backward ...
//   ZT_ASSIGN_OR_RETURN(bool skip, scaler->update(any_rank_overflowed));
//
// Thread-safety: not synchronised; one owner (the engine) drives it.
#pragma once

#include <cstdint>
#include <memory>

#include "core/status.h"

namespace zerotrain::optim {

// DeepSpeed's fp16 section names and defaults.
struct LossScalerOptions {
  double loss_scale = 0.0;  // 0: dynamic; > 0: static
  int initial_scale_power = 16;
  int loss_scale_window = 1000;
  int hysteresis = 2;
  bool consecutive_hysteresis = false;
  double min_loss_scale = 1.0;
  bool log_overflows = true;  // zerotrain: rank 0 passes true, others false
};

// What a checkpoint stores (the fields DeepSpeed pickles with the scaler).
struct LossScalerState {
  double cur_scale = 1.0;
  int64_t cur_iter = 0;
  int64_t last_overflow_iter = -1;
  int cur_hysteresis = 0;
  friend bool operator==(const LossScalerState&, const LossScalerState&) = default;
};

class LossScaler {
 public:
  virtual ~LossScaler() = default;
  virtual double loss_scale() const = 0;
  // True when this step must be skipped. The dynamic scaler returns an
  // error (state unchanged) when an overflow arrives at min_loss_scale.
  virtual StatusOr<bool> update(bool overflow) = 0;
  virtual bool dynamic() const { return false; }
  virtual LossScalerState state() const = 0;
  virtual Status load_state(const LossScalerState& state) = 0;
};

class DynamicLossScaler : public LossScaler {
 public:
  static StatusOr<std::unique_ptr<DynamicLossScaler>> create(const LossScalerOptions& o);
  double loss_scale() const override { return state_.cur_scale; }
  StatusOr<bool> update(bool overflow) override;
  bool dynamic() const override { return true; }
  LossScalerState state() const override { return state_; }
  Status load_state(const LossScalerState& state) override;

 private:
  explicit DynamicLossScaler(const LossScalerOptions& o);
  LossScalerOptions options_;
  LossScalerState state_;
};

class StaticLossScaler : public LossScaler {
 public:
  explicit StaticLossScaler(double scale) : scale_(scale) {}
  double loss_scale() const override { return scale_; }
  StatusOr<bool> update(bool overflow) override { return overflow; }
  LossScalerState state() const override { return {scale_, 0, -1, 0}; }
  Status load_state(const LossScalerState& state) override;

 private:
  double scale_;
};

class NoLossScaler : public LossScaler {
 public:
  explicit NoLossScaler(bool check_grad_overflow = true) : check_(check_grad_overflow) {}
  double loss_scale() const override { return 1.0; }
  StatusOr<bool> update(bool overflow) override { return check_ && overflow; }
  LossScalerState state() const override { return {1.0, 0, -1, 0}; }
  Status load_state(const LossScalerState& state) override;

 private:
  bool check_;
};

// fp16: loss_scale 0 -> dynamic, > 0 -> static. InvalidArgument for a
// negative or non-finite loss_scale, loss_scale_window <= 0,
// min_loss_scale <= 0, hysteresis < 1 (dynamic only) or an initial scale
// that is not finite.
StatusOr<std::unique_ptr<LossScaler>> make_loss_scaler(const LossScalerOptions& options);

}  // namespace zerotrain::optim
