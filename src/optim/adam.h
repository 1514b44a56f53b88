// Adam / AdamW over flat fp32 arrays with DeepSpeed CPU-Adam semantics
// (DeepSpeed's csrc/adam/cpu_adam_impl.cpp), fused: one pass reads grad, param and both moments,
// writes param and moments and optionally an fp16/bf16 copy of the new
// weights (the ZeRO-Offload copy-back); grads may be fp32, fp16 or bf16.
// The pass is the device's Ops::adam (on the CPU: SIMD level picked at run
// time, all bit-identical, chunks over the OpenMP threads).
//
// Per element, step t (1-based), g = grad_scale * grad (AdamTensors):
//   Adam mode (adam_w_mode=false) with wd > 0:  g <- g + wd * p
//   m <- b1*m + (1-b1)*g;   v <- b2*v + (1-b2)*g^2
//   denom = sqrt(v) / sqrt(1 - b2^t) + eps          (no 1/sqrt(.) if !bias_correction)
//   AdamW mode with wd > 0:  p <- p * (1 - lr*wd)  (decoupled decay)
//   p <- p - lr / (1 - b1^t) * m / denom            (lr alone if !bias_correction)
//
//   ZT_ASSIGN_OR_RETURN(optim::Adam adam, optim::Adam::create({.lr = 3e-4}));
//   AdamState state = AdamState::zeros(n);
//   ZT_RETURN_IF_ERROR(adam.step({params, grads, state.exp_avg.span(),
//                                 state.exp_avg_sq.span()}, make_view(bf16_copy)));
// The element math is the device's (Ops::adam): this file holds the
// per-step scalars, the checks and the step count.
//
// Thread-safety: an Adam object is not synchronised; update() is const and
// may run on disjoint tensors from several threads after begin_step().
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "device/ops.h"

namespace zerotrain::optim {

// Field names follow DeepSpeed's optimizer.params (CPU-Adam defaults).
struct AdamOptions {
  double lr = 1e-3;
  std::array<double, 2> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool bias_correction = true;
  bool adam_w_mode = true;  // true: AdamW (decoupled decay); false: L2 Adam
};

// InvalidArgument naming the field for lr < 0, betas outside [0, 1),
// eps < 0, weight_decay < 0, or non-finite values.
Status validate(const AdamOptions& options);

// One flat tensor's worth of optimizer inputs, all the same length, in
// one place: device memory (one device) or host memory (offloaded states,
// run by the host ops). grads are fp32, fp16 or bf16 (widened exactly in
// registers, saving a conversion pass).
struct AdamTensors {
  Tensor params;      // fp32
  ConstTensor grads;  // fp32, fp16 or bf16
  Tensor exp_avg;     // first moment (m), fp32
  Tensor exp_avg_sq;  // second moment (v), fp32
  // Each grad is multiplied by this first, in fp32 (as the grads scaled in
  // place by it would be): the engine's loss-scale unscaling and gradient
  // clipping, fused into the update's one pass.
  float grad_scale = 1.0f;
};

// Host moments owned together, zero-initialised (for driving Adam on host
// arrays directly; the ZeRO stages own theirs in device memory).
struct AdamState {
  std::vector<float> exp_avg;
  std::vector<float> exp_avg_sq;
  static AdamState zeros(size_t n) { return {std::vector<float>(n), std::vector<float>(n)}; }
};

// The stateless update for step number `step` (>= 1), on the Ops of the
// params' memory (device::ops_for). param_copy, if not empty, must be fp16
// or bf16 with params' length; it receives the rounded new weights.
// InvalidArgument on length/dtype mismatch or step < 1.
Status adam_update(const AdamOptions& options, int64_t step, const AdamTensors& tensors,
                   Tensor param_copy = {});
// The scalars of step `step` (device::AdamStep) for these options.
device::AdamStep adam_step_args(const AdamOptions& options, int64_t step, float grad_scale);

class Adam {
 public:
  static StatusOr<Adam> create(const AdamOptions& options);

  // One optimizer step on one tensor: begin_step() then update().
  Status step(const AdamTensors& tensors, Tensor param_copy = {});
  // For several tensors (or ZeRO partitions) in one step: call begin_step()
  // once, then update() on each.
  void begin_step() { ++step_count_; }
  Status update(const AdamTensors& tensors, Tensor param_copy = {}) const;

  const AdamOptions& options() const { return options_; }
  // Set by LR schedulers (OneCycle also cycles beta1 and pins beta2).
  void set_lr(double lr) { options_.lr = lr; }
  void set_betas(double beta1, double beta2) { options_.betas = {beta1, beta2}; }
  // Steps taken so far; saved and restored with checkpoints.
  int64_t step_count() const { return step_count_; }
  void set_step_count(int64_t steps) { step_count_ = steps; }

 private:
  explicit Adam(const AdamOptions& options) : options_(options) {}
  AdamOptions options_;
  int64_t step_count_ = 0;
};

}  // namespace zerotrain::optim
