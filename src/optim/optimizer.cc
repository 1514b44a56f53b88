// Optimizer adapters over Adam and Sgd, and the factory.
#include "optim/optimizer.h"

#include <string>

#include "device/device.h"
#include "device/ops.h"

namespace zerotrain::optim {
namespace {

Status check_state_count(std::string_view name, std::span<const Tensor> states, size_t want) {
  if (states.size() == want) return ok_status();
  return invalid_argument(std::string(name) + ": expected " + std::to_string(want) +
                          " state arrays, got " + std::to_string(states.size()));
}

class AdamOptimizer final : public Optimizer {
 public:
  explicit AdamOptimizer(Adam adam) : adam_(std::move(adam)) {}
  std::string_view name() const override { return adam_.options().adam_w_mode ? "adamw" : "adam"; }
  std::vector<std::string> state_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  void begin_step() override { adam_.begin_step(); }
  Status update(Tensor params, ConstTensor grads, std::span<const Tensor> states, Tensor param_copy,
                float grad_scale) const override {
    ZT_RETURN_IF_ERROR(check_state_count(name(), states, 2));
    return adam_.update({params, grads, states[0], states[1], grad_scale}, param_copy);
  }
  bool reads_16bit_gradients() const override { return true; }
  double lr() const override { return adam_.options().lr; }
  void set_lr(double lr) override { adam_.set_lr(lr); }
  void set_betas(double beta1, double beta2) override { adam_.set_betas(beta1, beta2); }
  int64_t step_count() const override { return adam_.step_count(); }
  void set_step_count(int64_t steps) override { adam_.set_step_count(steps); }

 private:
  Adam adam_;
};

class SgdOptimizer final : public Optimizer {
 public:
  explicit SgdOptimizer(Sgd sgd) : sgd_(std::move(sgd)) {}
  std::string_view name() const override { return "sgd"; }
  std::vector<std::string> state_names() const override {
    if (sgd_.options().momentum == 0.0) return {};
    return {"momentum_buffer"};
  }
  void begin_step() override { sgd_.begin_step(); }
  Status update(Tensor params, ConstTensor grads, std::span<const Tensor> states, Tensor param_copy,
                float grad_scale) const override {
    const bool momentum = sgd_.options().momentum != 0.0;
    ZT_RETURN_IF_ERROR(check_state_count("sgd", states, momentum ? 1 : 0));
    if (grads.dtype != DType::kFloat32) {
      return invalid_argument("sgd: grads must be fp32, got " +
                              std::string(dtype_name(grads.dtype)));
    }
    ZT_RETURN_IF_ERROR(sgd_.update({params, grads, momentum ? states[0] : Tensor(), grad_scale}));
    if (param_copy.numel == 0) return ok_status();
    if (param_copy.dtype == DType::kFloat32) {
      return invalid_argument("sgd: param_copy must be fp16 or bf16, not fp32");
    }
    return device::ops_for(params).convert(params, param_copy);
  }
  double lr() const override { return sgd_.options().lr; }
  void set_lr(double lr) override { sgd_.set_lr(lr); }
  int64_t step_count() const override { return sgd_.step_count(); }
  void set_step_count(int64_t steps) override { sgd_.set_step_count(steps); }

 private:
  Sgd sgd_;
};

}  // namespace

StatusOr<std::unique_ptr<Optimizer>> make_optimizer(const OptimizerOptions& options) {
  if (const auto* adam = std::get_if<AdamOptions>(&options)) {
    ZT_ASSIGN_OR_RETURN(Adam a, Adam::create(*adam));
    return std::unique_ptr<Optimizer>(new AdamOptimizer(std::move(a)));
  }
  ZT_ASSIGN_OR_RETURN(Sgd s, Sgd::create(std::get<SgdOptions>(options)));
  return std::unique_ptr<Optimizer>(new SgdOptimizer(std::move(s)));
}

bool effective_adam_w_mode(std::string_view type, bool adam_w_mode) {
  return type == "AdamW" || type == "adamw" || adam_w_mode;
}

}  // namespace zerotrain::optim
