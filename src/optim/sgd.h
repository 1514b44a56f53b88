// SGD with momentum, dampening, Nesterov and L2 weight decay, exactly as
// torch.optim.SGD (DeepSpeed passes "SGD" through to torch):
//   d = g + weight_decay * p
//   if momentum != 0:
//     buf = d on the first step, else buf = momentum * buf + (1 - dampening) * d
//     d = nesterov ? d + momentum * buf : buf
//   p = p - lr * d
//
//   ZT_ASSIGN_OR_RETURN(optim::Sgd sgd, optim::Sgd::create({.lr = 0.1, .momentum = 0.9}));
//   ZT_RETURN_IF_ERROR(sgd.step({params, grads, momentum_buffer}));
//
// Thread-safety: not synchronised; update() is const and may run on
// disjoint tensors concurrently after begin_step().
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"
#include "core/tensor.h"

namespace zerotrain::optim {

struct SgdOptions {
  double lr = 1e-3;  // torch requires lr; DeepSpeed configs always give it
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

// InvalidArgument for negative values, or nesterov without momentum > 0 and
// dampening == 0 (torch's rule).
Status validate(const SgdOptions& options);

// fp32, one length, one memory (device or host; the update runs on its Ops).
struct SgdTensors {
  Tensor params;
  ConstTensor grads;
  Tensor momentum_buffer;   // params' length; may be empty if momentum == 0
  float grad_scale = 1.0f;  // each grad is multiplied by it first (as AdamTensors)
};

class Sgd {
 public:
  static StatusOr<Sgd> create(const SgdOptions& options);

  Status step(const SgdTensors& tensors);
  void begin_step() { ++step_count_; }
  // The first step (step_count() == 1) initialises the momentum buffer.
  Status update(const SgdTensors& tensors) const;

  const SgdOptions& options() const { return options_; }
  void set_lr(double lr) { options_.lr = lr; }
  int64_t step_count() const { return step_count_; }
  void set_step_count(int64_t steps) { step_count_ = steps; }

 private:
  explicit Sgd(const SgdOptions& options) : options_(options) {}
  SgdOptions options_;
  int64_t step_count_ = 0;
};

}  // namespace zerotrain::optim
