// Per-element math shared by the CUDA kernels and the CPU tests: each
// function is __host__ __device__ under nvcc and plain inline under g++, so
// the arithmetic a kernel does is checked exactly on a machine with no GPU
// (tests/device/cuda/element_math_test.cc compares it with the CPU
// kernels); the kernels only add indexing.
//
//   float y = zerotrain::device::cuda::gelu_tanh(x);
//   uint16_t b = zerotrain::device::cuda::bf16_round_bits(x);   // as core/half.h
//
// Thread-safety: pure functions on values.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/half.h"
#include "device/ops.h"

#ifdef __CUDACC__
#define ZT_HD __host__ __device__ __forceinline__
#else
#define ZT_HD inline
#endif

namespace zerotrain::device::cuda {

ZT_HD uint32_t float_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

ZT_HD float bits_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// The fp16/bf16 conversions are core/half.h's (host and device alike), so
// the kernels round exactly as the CPU does.
// fp32 -> bf16 bits, round to nearest even; NaN stays a quiet NaN.
ZT_HD uint16_t bf16_round_bits(float value) { return fp32_to_bf16_bits(value); }
ZT_HD float bf16_to_float(uint16_t b) { return bf16_bits_to_fp32(b); }
// float(bf16(x)): x rounded through bf16.
ZT_HD float round_bf16(float x) { return bf16_to_float(bf16_round_bits(x)); }
// fp32 -> fp16 bits (round to nearest even, subnormals, overflow to inf,
// NaN payload kept) and back.
ZT_HD uint16_t fp16_round_bits(float value) { return fp32_to_fp16_bits(value); }
ZT_HD float fp16_to_float(uint16_t h) { return fp16_bits_to_fp32(h); }

// ---- Element access by dtype (the kernels' templates) ----
// 16-bit values are their bits (uint16_t); loads are exact, stores round
// to nearest even as core/half.h.
struct F32Elem {
  using T = float;
  static ZT_HD float load(const T* p, int64_t i) { return p[i]; }
  static ZT_HD void store(T* p, int64_t i, float v) { p[i] = v; }
  static ZT_HD float round(float v) { return v; }
};
struct Bf16Elem {
  using T = uint16_t;
  static ZT_HD float load(const T* p, int64_t i) { return bf16_to_float(p[i]); }
  static ZT_HD void store(T* p, int64_t i, float v) { p[i] = bf16_round_bits(v); }
  static ZT_HD float round(float v) { return round_bf16(v); }
};
struct Fp16Elem {
  using T = uint16_t;
  static ZT_HD float load(const T* p, int64_t i) { return fp16_to_float(p[i]); }
  static ZT_HD void store(T* p, int64_t i, float v) { p[i] = fp16_round_bits(v); }
  static ZT_HD float round(float v) { return fp16_to_float(fp16_round_bits(v)); }
};

// ---- fp32 arithmetic rounded at every operation ----
// nvcc contracts a*b + c into one FMA (one rounding instead of two) by
// default; the CPU kernels round each product and sum (the optimizer
// files are built with -ffp-contract=off, and baseline x86-64 has no FMA).
// The formulas below use these so the device evaluates exactly what the
// host tests check.
ZT_HD float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
ZT_HD float add_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
ZT_HD float sub_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
ZT_HD float div_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
ZT_HD float sqrt_rn(float a) {
#ifdef __CUDA_ARCH__
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

// ---- Activations (device/cpu/kernels/gelu.cc: same order; SwiGLU is in
// layer_math.h, on the CPU's exp) ----
// The CPU's GELU uses its vectorisable fast_tanh (absolute error about
// 1e-7); these use tanhf, so they agree to that error, not bitwise.
inline constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
inline constexpr float kGeluCubic = 0.044715f;

ZT_HD float gelu_inner(float x) {  // sqrt(2/pi)·(x + 0.044715·x³)
  return mul_rn(kGeluScale, add_rn(x, mul_rn(mul_rn(mul_rn(kGeluCubic, x), x), x)));
}
// 0.5·x·(1 + tanh(u)).
ZT_HD float gelu_tanh(float x) {
  return mul_rn(mul_rn(0.5f, x), add_rn(1.0f, tanhf(gelu_inner(x))));
}
// d gelu / dx: 0.5·(1 + th) + 0.5·x·(1 − th²)·sqrt(2/pi)·(1 + 3·0.044715·x²).
ZT_HD float gelu_slope(float x) {
  const float th = tanhf(gelu_inner(x));
  const float sech2 = sub_rn(1.0f, mul_rn(th, th));
  const float poly = add_rn(1.0f, mul_rn(mul_rn(mul_rn(3.0f, kGeluCubic), x), x));
  return add_rn(mul_rn(0.5f, add_rn(1.0f, th)),
                mul_rn(mul_rn(mul_rn(mul_rn(0.5f, x), sech2), kGeluScale), poly));
}
// y + a·x (Ops::axpy), rounded twice as the CPU loop.
ZT_HD float axpy_element(float y, float a, float x) { return add_rn(y, mul_rn(a, x)); }

// ---- Optimizer updates (device/cpu/optimizer_kernels.cc: same order) ----
struct AdamState {
  float param, exp_avg, exp_avg_sq;
};
// One element of the fused Adam/AdamW step (ops.h AdamStep), the CPU's
// adam_portable expression by expression: bit-identical to it.
ZT_HD AdamState adam_element(const AdamStep& s, float grad, AdamState in) {
  if (s.grad_scale != 1.0f) grad = mul_rn(grad, s.grad_scale);
  float param = in.param;
  if (s.l2_mode) grad = add_rn(mul_rn(param, s.l2), grad);
  const float m = add_rn(mul_rn(in.exp_avg, s.beta1), mul_rn(grad, s.one_minus_beta1));
  const float v =
      add_rn(mul_rn(in.exp_avg_sq, s.beta2), mul_rn(mul_rn(grad, grad), s.one_minus_beta2));
  const float denom = add_rn(mul_rn(sqrt_rn(v), s.bc2_rsqrt), s.eps);
  const float update = div_rn(m, denom);
  if (s.decoupled) param = mul_rn(param, s.decay);
  param = sub_rn(param, mul_rn(s.step_size, update));
  return {param, m, v};
}

// One element of SGD (ops.h SgdStep), the CPU's sgd_chunk: returns the new
// parameter; *momentum (read unless step.first; null without momentum) is
// updated.
ZT_HD float sgd_element(const SgdStep& s, float param, float grad, float* momentum) {
  float d = s.grad_scale != 1.0f ? mul_rn(grad, s.grad_scale) : grad;
  if (s.weight_decay != 0.0f) d = add_rn(d, mul_rn(s.weight_decay, param));
  if (s.use_momentum) {
    const float b =
        s.first ? d : add_rn(mul_rn(s.momentum, *momentum), mul_rn(s.dampening_complement, d));
    *momentum = b;
    d = s.nesterov ? add_rn(d, mul_rn(s.momentum, b)) : b;
  }
  return sub_rn(param, mul_rn(s.lr, d));
}

}  // namespace zerotrain::device::cuda
