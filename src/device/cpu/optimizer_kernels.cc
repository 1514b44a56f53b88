// The CPU optimizer kernels behind Ops::adam / sgd / sum_squares / scale:
// the portable fused Adam (the reference the SIMD kernels match), SGD,
// the block-parallel deterministic sum of squares and overflow check,
// with run-time SIMD dispatch and OpenMP chunking. Moved from optim/.
#include "device/cpu/optimizer_kernels.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "core/half.h"
#include "device/cpu/adam_kernels.h"
#include "device/cpu/cpu_features.h"
#include "device/cpu/elementwise.h"
#include "device/cpu/reduce_kernels.h"

namespace zerotrain::device::cpu {
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
  return kind == GradKind::kFp16 ? fp16_bits_to_fp32(bits) : bf16_bits_to_fp32(bits);
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

bool any_nonfinite_portable(const float* x, size_t n) {
  bool hit = false;
  for (size_t i = 0; i < n; ++i) {
    hit |= (std::bit_cast<uint32_t>(x[i]) & 0x7f800000u) == 0x7f800000u;
  }
  return hit;
}

double sum_squares_portable(const float* x, size_t n) {
  double acc = 0.0;
  for (size_t i = 0; i < n; ++i) acc += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return acc;
}

}  // namespace detail

namespace {

// 64 Ki elements: 1.25 MiB of traffic per chunk, enough to amortise the
// OpenMP hand-out, small enough to balance two to a hundred threads.
constexpr size_t kChunk = size_t{1} << 16;
// The reductions' fixed block: the unit of work and of summation order.
constexpr size_t kBlock = size_t{1} << 15;

using AdamKernel = void (*)(const detail::AdamKernelArgs&, const detail::AdamKernelPtrs&, size_t);

AdamKernel pick_adam_kernel() {
#if defined(__x86_64__)
  switch (active_simd_level()) {
    case SimdLevel::kAvx512:
      return detail::adam_avx512;
    case SimdLevel::kAvx2:
      return detail::adam_avx2;
    case SimdLevel::kPortable:
      break;
  }
#endif
  return detail::adam_portable;
}

struct ReduceKernels {
  bool (*any_nonfinite)(const float*, size_t);
  double (*sum_squares)(const float*, size_t);
};

ReduceKernels reduce_kernels() {
#if defined(__x86_64__)
  switch (active_simd_level()) {
    case SimdLevel::kAvx512:
      return {detail::any_nonfinite_avx512, detail::sum_squares_avx512};
    case SimdLevel::kAvx2:
      return {detail::any_nonfinite_avx2, detail::sum_squares_avx2};
    case SimdLevel::kPortable:
      break;
  }
#endif
  return {detail::any_nonfinite_portable, detail::sum_squares_portable};
}

int64_t block_count(size_t n) { return static_cast<int64_t>((n + kBlock - 1) / kBlock); }

void sgd_chunk(const SgdStep& a, float* p, const float* g, float* buf, size_t n) {
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

void adam_update(const AdamStep& step, float* params, const void* grads, DType grad_dtype,
                 float* exp_avg, float* exp_avg_sq, void* copy, DType copy_dtype, size_t n) {
  detail::AdamKernelArgs args{};
  args.beta1 = step.beta1;
  args.beta2 = step.beta2;
  args.one_minus_beta1 = step.one_minus_beta1;
  args.one_minus_beta2 = step.one_minus_beta2;
  args.eps = step.eps;
  args.step_size = step.step_size;
  args.bc2_rsqrt = step.bc2_rsqrt;
  args.decay = step.decay;
  args.l2 = step.l2;
  args.decoupled = step.decoupled;
  args.l2_mode = step.l2_mode;
  args.grad_scale = step.grad_scale;
  args.scale_grads = step.grad_scale != 1.0f;
  args.copy_kind = copy == nullptr                 ? detail::CopyKind::kNone
                   : copy_dtype == DType::kFloat16 ? detail::CopyKind::kFp16
                                                   : detail::CopyKind::kBf16;
  args.grad_kind = grad_dtype == DType::kFloat32   ? detail::GradKind::kFp32
                   : grad_dtype == DType::kFloat16 ? detail::GradKind::kFp16
                                                   : detail::GradKind::kBf16;
  const detail::AdamKernelPtrs base{params, grads, exp_avg, exp_avg_sq,
                                    static_cast<uint16_t*>(copy)};
  const AdamKernel kernel = pick_adam_kernel();
  const auto chunks = static_cast<int64_t>((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t off = static_cast<size_t>(c) * kChunk;
    kernel(args, detail::advance(args, base, off), std::min(kChunk, n - off));
  }
}

void sgd_update(const SgdStep& step, float* params, const float* grads, float* momentum_buffer,
                size_t n) {
  const auto chunks = static_cast<int64_t>((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t off = static_cast<size_t>(c) * kChunk;
    float* buf = step.use_momentum ? momentum_buffer + off : nullptr;
    sgd_chunk(step, params + off, grads + off, buf, std::min(kChunk, n - off));
  }
}

bool has_inf_or_nan(const float* x, size_t n) {
  const ReduceKernels k = reduce_kernels();
  const int64_t blocks = block_count(n);
  bool hit = false;
#pragma omp parallel for schedule(static) reduction(|| : hit) if (blocks > 4)
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t off = static_cast<size_t>(b) * kBlock;
    hit = hit || k.any_nonfinite(x + off, std::min(kBlock, n - off));
  }
  return hit;
}

double sum_squares(const float* x, size_t n) {
  const ReduceKernels k = reduce_kernels();
  const int64_t blocks = block_count(n);
  if (blocks <= 1) return k.sum_squares(x, n);
  std::vector<double> partial(static_cast<size_t>(blocks));
#pragma omp parallel for schedule(static) if (blocks > 4)
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t off = static_cast<size_t>(b) * kBlock;
    partial[static_cast<size_t>(b)] = k.sum_squares(x + off, std::min(kBlock, n - off));
  }
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

double sum_squares(DType dtype, const void* x, size_t n) {
  if (dtype == DType::kFloat32) return sum_squares(static_cast<const float*>(x), n);
  const ReduceKernels k = reduce_kernels();
  const int64_t blocks = block_count(n);
  std::vector<double> partial(static_cast<size_t>(blocks));
  const size_t width = dtype_size(dtype);
#pragma omp parallel if (blocks > 4)
  {
    std::vector<float> wide(std::min(kBlock, n));  // one block's fp32 values a thread
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const size_t off = static_cast<size_t>(b) * kBlock;
      const size_t len = std::min(kBlock, n - off);
      to_fp32(dtype, static_cast<const std::byte*>(x) + off * width, len, wide.data());
      partial[static_cast<size_t>(b)] = k.sum_squares(wide.data(), len);
    }
  }
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

void scale(float* x, size_t n, float factor) {
  const int64_t blocks = block_count(n);
#pragma omp parallel for schedule(static) if (blocks > 4)
  for (int64_t b = 0; b < blocks; ++b) {
    float* p = x + static_cast<size_t>(b) * kBlock;
    const size_t len = std::min(kBlock, n - static_cast<size_t>(b) * kBlock);
    for (size_t i = 0; i < len; ++i) p[i] *= factor;
  }
}

}  // namespace zerotrain::device::cpu
