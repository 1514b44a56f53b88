// SGD (torch semantics): checks and the step's scalars; the pass is the
// device's Ops::sgd.
#include "optim/sgd.h"

#include <cmath>
#include <string>

#include "device/device.h"
#include "device/ops.h"

namespace zerotrain::optim {
namespace {

Status bad(const std::string& what) { return invalid_argument("SGD: " + what); }

}  // namespace

Status validate(const SgdOptions& o) {
  if (!std::isfinite(o.lr) || o.lr < 0) return bad("invalid lr " + std::to_string(o.lr));
  if (!std::isfinite(o.momentum) || o.momentum < 0) {
    return bad("invalid momentum " + std::to_string(o.momentum));
  }
  if (!std::isfinite(o.weight_decay) || o.weight_decay < 0) {
    return bad("invalid weight_decay " + std::to_string(o.weight_decay));
  }
  if (!std::isfinite(o.dampening)) return bad("invalid dampening " + std::to_string(o.dampening));
  if (o.nesterov && (o.momentum <= 0 || o.dampening != 0)) {
    return bad("nesterov requires momentum > 0 and dampening == 0");
  }
  return ok_status();
}

StatusOr<Sgd> Sgd::create(const SgdOptions& options) {
  ZT_RETURN_IF_ERROR(validate(options));
  return Sgd(options);
}

Status Sgd::step(const SgdTensors& tensors) {
  begin_step();
  return update(tensors);
}

Status Sgd::update(const SgdTensors& t) const {
  if (step_count_ < 1) return bad("update() before begin_step()");
  const size_t n = t.params.numel;
  const bool use_momentum = options_.momentum != 0.0;
  if (t.grads.numel != n || (use_momentum && t.momentum_buffer.numel != n)) {
    return bad("tensor lengths differ: params " + std::to_string(n) + ", grads " +
               std::to_string(t.grads.numel) + ", momentum_buffer " +
               std::to_string(t.momentum_buffer.numel));
  }
  if (t.grads.dtype != DType::kFloat32)
    return bad("grads must be fp32, got " + std::string(dtype_name(t.grads.dtype)));
  const device::SgdStep a{static_cast<float>(options_.lr),
                          static_cast<float>(options_.momentum),
                          static_cast<float>(1.0 - options_.dampening),
                          static_cast<float>(options_.weight_decay),
                          use_momentum,
                          step_count_ == 1,
                          options_.nesterov,
                          t.grad_scale};
  return device::ops_for(t.params).sgd(a, t.params.ptr<float>(), t.grads.ptr<float>(),
                                       use_momentum ? t.momentum_buffer.ptr<float>() : nullptr, n);
}

}  // namespace zerotrain::optim
