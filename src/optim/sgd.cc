// SGD (torch semantics). Plain loops: the compiler vectorises them and the
// update is memory-bound; OpenMP splits large tensors.
#include "optim/sgd.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace zerotrain::optim {
namespace {

constexpr size_t kChunk = size_t{1} << 16;

Status bad(const std::string& what) { return invalid_argument("SGD: " + what); }

struct SgdArgs {
  float lr, momentum, dampening_complement, weight_decay;
  bool use_momentum, first, nesterov;
  float grad_scale;
};

void sgd_chunk(const SgdArgs& a, float* p, const float* g, float* buf, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    float d = a.grad_scale != 1.0f ? g[i] * a.grad_scale : g[i];
    if (a.weight_decay != 0.0f) d = d + a.weight_decay * p[i];
    if (a.use_momentum) {
      const float b = a.first ? d : a.momentum * buf[i] + a.dampening_complement * d;
      buf[i] = b;
      d = a.nesterov ? d + a.momentum * b : b;
    }
    p[i] = p[i] - a.lr * d;
  }
}

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
  const size_t n = t.params.size();
  const bool use_momentum = options_.momentum != 0.0;
  if (t.grads.size() != n || (use_momentum && t.momentum_buffer.size() != n)) {
    return bad("tensor lengths differ: params " + std::to_string(n) + ", grads " +
               std::to_string(t.grads.size()) + ", momentum_buffer " +
               std::to_string(t.momentum_buffer.size()));
  }
  const SgdArgs a{static_cast<float>(options_.lr),
                  static_cast<float>(options_.momentum),
                  static_cast<float>(1.0 - options_.dampening),
                  static_cast<float>(options_.weight_decay),
                  use_momentum,
                  step_count_ == 1,
                  options_.nesterov,
                  t.grad_scale};
  const auto chunks = static_cast<int64_t>((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t off = static_cast<size_t>(c) * kChunk;
    float* buf = use_momentum ? t.momentum_buffer.data() + off : nullptr;
    sgd_chunk(a, t.params.data() + off, t.grads.data() + off, buf, std::min(kChunk, n - off));
  }
  return ok_status();
}

}  // namespace zerotrain::optim
