// Optimizer: the one interface the ZeRO stages and the engine drive, so they
// never ask which optimizer they hold (DeepSpeed's engine asks with isinstance; this interface says
// instead). It says how many fp32 state arrays each parameter element needs (Adam 2, SGD with
// momentum 1), so a stage can allocate and partition them, and updates one flat tensor (or shard)
// given those arrays. Adam and Sgd stay usable on their own.
//
//   ZT_ASSIGN_OR_RETURN(auto opt, make_optimizer(AdamOptions{.lr = 3e-4}));
//   std::vector<Tensor> states;                    // opt->state_count() of them
//   opt->begin_step();
//   ZT_RETURN_IF_ERROR(opt->update(master_shard, grads, states, bf16_shard));
//
// DeepSpeed's "type" -> options: "Adam" and "AdamW" build AdamOptions, with
// adam_w_mode = effective_adam_w_mode(type, params.adam_w_mode); "SGD"
// builds SgdOptions.
//
// Thread-safety: as Adam / Sgd: update() is const and may run on disjoint
// shards concurrently after begin_step(); the rest needs one owner.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "optim/adam.h"
#include "optim/sgd.h"

namespace zerotrain::optim {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string_view name() const = 0;  // "adamw", "adam" or "sgd"
  // Per-element fp32 state arrays, in this order (checkpoint names).
  virtual std::vector<std::string> state_names() const = 0;
  int state_count() const { return static_cast<int>(state_names().size()); }

  virtual void begin_step() = 0;
  // Updates params in place, on the Ops of their memory (a device's, or
  // the host's for offloaded states). params fp32; grads: fp32 (any
  // optimizer) or fp16/bf16 (Adam); states: state_count() fp32 tensors of
  // params' length; param_copy: empty, or fp16/bf16 of params' length to
  // receive the new weights. grad_scale multiplies each grad first (in
  // fp32, bit for bit what scaling the grads in place would give), so the
  // engine's unscaling and clipping cost no pass of their own.
  virtual Status update(Tensor params, ConstTensor grads, std::span<const Tensor> states,
                        Tensor param_copy = {}, float grad_scale = 1.0f) const = 0;
  // Whether update() takes fp16/bf16 grads (widening each as it reads it),
  // so a 16-bit strategy can hand over its accumulator with no fp32 copy.
  virtual bool reads_16bit_gradients() const { return false; }
  virtual double lr() const = 0;
  virtual void set_lr(double lr) = 0;
  virtual void set_betas(double beta1, double beta2) {}  // no-op without betas
  virtual int64_t step_count() const = 0;
  virtual void set_step_count(int64_t steps) = 0;
};

using OptimizerOptions = std::variant<AdamOptions, SgdOptions>;

// InvalidArgument (naming the field) for invalid options.
StatusOr<std::unique_ptr<Optimizer>> make_optimizer(const OptimizerOptions& options);

// DeepSpeed: type "AdamW" always decouples; "Adam" decouples unless
// adam_w_mode is false.
bool effective_adam_w_mode(std::string_view type, bool adam_w_mode);

}  // namespace zerotrain::optim
