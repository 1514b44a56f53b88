// Adam/AdamW: option checks, the per-step scalars and the dispatch to the
// device's fused Ops::adam (see adam.h).
#include "optim/adam.h"

#include <cmath>
#include <string>

#include "device/device.h"

namespace zerotrain::optim {
namespace {

Status bad(const std::string& what) { return invalid_argument("Adam: " + what); }

Status check_tensors(const AdamTensors& t, Tensor copy, int64_t step) {
  const size_t n = t.params.numel;
  if (step < 1) return bad("step must be >= 1 (got " + std::to_string(step) + ")");
  if (t.params.dtype != DType::kFloat32 || t.exp_avg.dtype != DType::kFloat32 ||
      t.exp_avg_sq.dtype != DType::kFloat32)
    return bad("params and moments must be fp32");
  if (t.grads.numel != n) {
    return bad("tensor lengths differ: params " + std::to_string(n) + ", grads " +
               std::to_string(t.grads.numel));
  }
  if (t.exp_avg.numel != n || t.exp_avg_sq.numel != n) {
    return bad("tensor lengths differ: params " + std::to_string(n) + ", exp_avg " +
               std::to_string(t.exp_avg.numel) + ", exp_avg_sq " +
               std::to_string(t.exp_avg_sq.numel));
  }
  if (t.grads.device != t.params.device || t.exp_avg.device != t.params.device ||
      t.exp_avg_sq.device != t.params.device)
    return bad("params, grads and moments must be in the same memory");
  if (copy.data == nullptr && copy.numel == 0) return ok_status();
  if (copy.dtype == DType::kFloat32) return bad("param_copy must be fp16 or bf16, not fp32");
  if (copy.data == nullptr) return bad("param_copy has no data");
  if (copy.numel != n) {
    return bad("param_copy has " + std::to_string(copy.numel) + " elements, params " +
               std::to_string(n));
  }
  return ok_status();
}

}  // namespace

Status validate(const AdamOptions& o) {
  auto finite = [](double x) { return std::isfinite(x); };
  if (!finite(o.lr) || o.lr < 0)
    return bad("invalid lr " + std::to_string(o.lr) + " (must be >= 0)");
  for (int i = 0; i < 2; ++i) {
    if (!finite(o.betas[i]) || o.betas[i] < 0 || o.betas[i] >= 1) {
      return bad("invalid betas[" + std::to_string(i) + "] " + std::to_string(o.betas[i]) +
                 " (must be in [0, 1))");
    }
  }
  if (!finite(o.eps) || o.eps < 0)
    return bad("invalid eps " + std::to_string(o.eps) + " (must be >= 0)");
  if (!finite(o.weight_decay) || o.weight_decay < 0) {
    return bad("invalid weight_decay " + std::to_string(o.weight_decay) + " (must be >= 0)");
  }
  return ok_status();
}

device::AdamStep adam_step_args(const AdamOptions& o, int64_t step, float grad_scale) {
  const double b1 = o.betas[0];
  const double b2 = o.betas[1];
  double step_size = o.lr;
  double bc2_rsqrt = 1.0;
  if (o.bias_correction) {
    step_size = o.lr / (1.0 - std::pow(b1, static_cast<double>(step)));
    bc2_rsqrt = 1.0 / std::sqrt(1.0 - std::pow(b2, static_cast<double>(step)));
  }
  const bool wd = o.weight_decay > 0.0;
  device::AdamStep a{};
  a.beta1 = static_cast<float>(b1);
  a.beta2 = static_cast<float>(b2);
  a.one_minus_beta1 = static_cast<float>(1.0 - b1);
  a.one_minus_beta2 = static_cast<float>(1.0 - b2);
  a.eps = static_cast<float>(o.eps);
  a.step_size = static_cast<float>(step_size);
  a.bc2_rsqrt = static_cast<float>(bc2_rsqrt);
  a.decay = static_cast<float>(1.0 - o.lr * o.weight_decay);
  a.l2 = static_cast<float>(o.weight_decay);
  a.decoupled = wd && o.adam_w_mode;
  a.l2_mode = wd && !o.adam_w_mode;
  a.grad_scale = grad_scale;
  return a;
}

Status adam_update(const AdamOptions& options, int64_t step, const AdamTensors& t,
                   Tensor param_copy) {
  ZT_RETURN_IF_ERROR(check_tensors(t, param_copy, step));
  const bool copy = param_copy.numel > 0;
  return device::ops_for(t.params).adam(
      adam_step_args(options, step, t.grad_scale), t.params.ptr<float>(), t.grads.data,
      t.grads.dtype, t.exp_avg.ptr<float>(), t.exp_avg_sq.ptr<float>(),
      copy ? param_copy.data : nullptr, param_copy.dtype, t.params.numel);
}

StatusOr<Adam> Adam::create(const AdamOptions& options) {
  ZT_RETURN_IF_ERROR(validate(options));
  return Adam(options);
}

Status Adam::step(const AdamTensors& tensors, Tensor param_copy) {
  begin_step();
  return update(tensors, param_copy);
}

Status Adam::update(const AdamTensors& tensors, Tensor param_copy) const {
  if (step_count_ < 1) return bad("update() before begin_step()");
  return adam_update(options_, step_count_, tensors, param_copy);
}

}  // namespace zerotrain::optim
