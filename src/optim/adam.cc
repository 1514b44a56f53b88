// Adam/AdamW: option checks, per-step scalars, OpenMP chunking, dispatch,
// and the portable kernel (the reference the SIMD kernels match).
#include "optim/adam.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "optim/adam_kernels.h"
#include "device/cpu/cpu_features.h"
#include "core/half.h"

namespace zerotrain::optim {
namespace detail {

AdamKernelPtrs advance(const AdamKernelArgs& a, const AdamKernelPtrs& p, size_t i) {
  const size_t grad_bytes = a.grad_kind == GradKind::kFp32 ? 4 : 2;
  return {p.params + i, static_cast<const char*>(p.grads) + i * grad_bytes, p.exp_avg + i,
          p.exp_avg_sq + i, p.copy != nullptr ? p.copy + i : nullptr};
}

namespace {
float load_grad(GradKind kind, const void* grads, size_t i) {
  if (kind == GradKind::kFp32) return static_cast<const float*>(grads)[i];
  const uint16_t bits = static_cast<const uint16_t*>(grads)[i];
  return kind == GradKind::kFp16 ? fp16_bits_to_fp32(bits)
                                 : bf16_bits_to_fp32(bits);
}
}  // namespace

void adam_portable(const AdamKernelArgs& a, const AdamKernelPtrs& p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    float grad = load_grad(a.grad_kind, p.grads, i);
    if (a.scale_grads) grad = grad * a.grad_scale;
    float param = p.params[i];
    if (a.l2_mode) grad = param * a.l2 + grad;
    const float m = p.exp_avg[i] * a.beta1 + grad * a.one_minus_beta1;
    const float v = p.exp_avg_sq[i] * a.beta2 + (grad * grad) * a.one_minus_beta2;
    const float denom = std::sqrt(v) * a.bc2_rsqrt + a.eps;
    const float update = m / denom;
    if (a.decoupled) param = param * a.decay;
    param = param - a.step_size * update;
    p.exp_avg[i] = m;
    p.exp_avg_sq[i] = v;
    p.params[i] = param;
    if (a.copy_kind == CopyKind::kFp16) p.copy[i] = fp32_to_fp16_bits(param);
    if (a.copy_kind == CopyKind::kBf16) p.copy[i] = fp32_to_bf16_bits(param);
  }
}

}  // namespace detail

namespace {

// 64 Ki elements: 1.25 MiB of traffic per chunk, enough to amortise the
// OpenMP hand-out, small enough to balance two to a hundred threads.
constexpr size_t kChunk = size_t{1} << 16;

using Kernel = void (*)(const detail::AdamKernelArgs&, const detail::AdamKernelPtrs&, size_t);

Kernel pick_kernel() {
#if defined(__x86_64__)
  switch (device::cpu::active_simd_level()) {
    case device::cpu::SimdLevel::kAvx512:
      return detail::adam_avx512;
    case device::cpu::SimdLevel::kAvx2:
      return detail::adam_avx2;
    case device::cpu::SimdLevel::kPortable:
      break;
  }
#endif
  return detail::adam_portable;
}

Status bad(const std::string& what) { return invalid_argument("Adam: " + what); }

detail::AdamKernelArgs make_args(const AdamOptions& o, int64_t step) {
  const double b1 = o.betas[0];
  const double b2 = o.betas[1];
  double step_size = o.lr;
  double bc2_rsqrt = 1.0;
  if (o.bias_correction) {
    step_size = o.lr / (1.0 - std::pow(b1, static_cast<double>(step)));
    bc2_rsqrt = 1.0 / std::sqrt(1.0 - std::pow(b2, static_cast<double>(step)));
  }
  const bool wd = o.weight_decay > 0.0;
  detail::AdamKernelArgs a{};
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
  return a;
}

Status check_grads(const AdamTensors& t) {
  const size_t n = t.params.size();
  if (t.grads16.numel == 0 && t.grads16.data == nullptr) {
    if (t.grads.size() == n) return ok_status();
    return bad("tensor lengths differ: params " + std::to_string(n) + ", grads " +
               std::to_string(t.grads.size()));
  }
  if (!t.grads.empty()) return bad("give grads or grads16, not both");
  if (t.grads16.dtype == DType::kFloat32) return bad("grads16 must be fp16 or bf16");
  if (t.grads16.numel != n || t.grads16.data == nullptr) {
    return bad("grads16 has " + std::to_string(t.grads16.numel) + " elements, params " +
               std::to_string(n));
  }
  return ok_status();
}

Status check_tensors(const AdamTensors& t, TensorView copy, int64_t step) {
  const size_t n = t.params.size();
  if (step < 1) return bad("step must be >= 1 (got " + std::to_string(step) + ")");
  ZT_RETURN_IF_ERROR(check_grads(t));
  if (t.exp_avg.size() != n || t.exp_avg_sq.size() != n) {
    return bad("tensor lengths differ: params " + std::to_string(n) + ", exp_avg " +
               std::to_string(t.exp_avg.size()) + ", exp_avg_sq " +
               std::to_string(t.exp_avg_sq.size()));
  }
  if (copy.data == nullptr && copy.numel == 0) return ok_status();
  if (copy.dtype == DType::kFloat32) {
    return bad("param_copy must be fp16 or bf16, not fp32");
  }
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

Status adam_update(const AdamOptions& options, int64_t step, const AdamTensors& t,
                   TensorView param_copy) {
  ZT_RETURN_IF_ERROR(check_tensors(t, param_copy, step));
  detail::AdamKernelArgs args = make_args(options, step);
  uint16_t* copy = nullptr;
  args.copy_kind = detail::CopyKind::kNone;
  if (param_copy.numel > 0) {
    copy = static_cast<uint16_t*>(param_copy.data);
    args.copy_kind = param_copy.dtype == DType::kFloat16 ? detail::CopyKind::kFp16
                                                                 : detail::CopyKind::kBf16;
  }
  args.grad_scale = t.grad_scale;
  args.scale_grads = t.grad_scale != 1.0f;
  const void* grads = t.grads.data();
  args.grad_kind = detail::GradKind::kFp32;
  if (t.grads16.numel > 0) {
    grads = t.grads16.data;
    args.grad_kind = t.grads16.dtype == DType::kFloat16 ? detail::GradKind::kFp16
                                                                : detail::GradKind::kBf16;
  }
  const detail::AdamKernelPtrs base{t.params.data(), grads, t.exp_avg.data(), t.exp_avg_sq.data(),
                                    copy};
  const Kernel kernel = pick_kernel();
  const size_t n = t.params.size();
  const auto chunks = static_cast<int64_t>((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t off = static_cast<size_t>(c) * kChunk;
    kernel(args, detail::advance(args, base, off), std::min(kChunk, n - off));
  }
  return ok_status();
}

StatusOr<Adam> Adam::create(const AdamOptions& options) {
  ZT_RETURN_IF_ERROR(validate(options));
  return Adam(options);
}

Status Adam::step(const AdamTensors& tensors, TensorView param_copy) {
  begin_step();
  return update(tensors, param_copy);
}

Status Adam::update(const AdamTensors& tensors, TensorView param_copy) const {
  if (step_count_ < 1) return bad("update() before begin_step()");
  return adam_update(options_, step_count_, tensors, param_copy);
}

}  // namespace zerotrain::optim
