// Per-element math of the CUDA layer kernels (cross-entropy, layers.cu,
// norms.cu) that must match the CPU kernels: __host__ __device__ under
// nvcc, plain inline under g++, like element_math.h, so a CPU test can
// compare it with device/cpu/kernels/vec_math.h exactly.
//
//   float e = zerotrain::device::cuda::cephes_exp(x);   // == cpu::fast_exp(x)
//   MaxSum a{-INFINITY, 0.0f};  a = max_sum_add(a, x);  a = max_sum_combine(a, b);
//
// Thread-safety: pure functions on values.
#pragma once

#include <cmath>
#include <cstdint>

#include "device/cuda/element_math.h"

namespace zerotrain::device::cuda {

// The CPU's fast_exp (vec_math.h) operation for operation, each rounded
// (element_math.h's *_rn: no FMA, as the baseline-x86 CPU build), so the
// cross-entropy's probabilities have the CPU's bits: Cephes expf, 0 below
// -87.33, capped at exp(88), NaN in gives NaN out.
ZT_HD float cephes_exp(float x) {
  const bool underflow = x < -87.33f;
  x = x > 88.0f ? 88.0f : x;
  x = x < -87.0f ? -87.0f : x;
  const float shifted = add_rn(mul_rn(x, 1.44269504088896341f), 12582912.0f);
  const float n = sub_rn(shifted, 12582912.0f);
  const int32_t ni = static_cast<int32_t>(float_bits(shifted)) - 0x4b400000;
  const float r = add_rn(sub_rn(x, mul_rn(n, 0.693359375f)), mul_rn(n, 2.12194440e-4f));
  float p = 1.9875691500e-4f;
  p = add_rn(mul_rn(p, r), 1.3981999507e-3f);
  p = add_rn(mul_rn(p, r), 8.3334519073e-3f);
  p = add_rn(mul_rn(p, r), 4.1665795894e-2f);
  p = add_rn(mul_rn(p, r), 1.6666665459e-1f);
  p = add_rn(mul_rn(p, r), 5.0000001201e-1f);
  const float y = add_rn(add_rn(mul_rn(mul_rn(p, r), r), r), 1.0f);
  const float scale = bits_float(static_cast<uint32_t>((ni + 127) << 23));
  return underflow ? 0.0f : mul_rn(y, scale);
}

// SwiGLU (device/cpu/kernels/swiglu.cc: the same expression on the same
// exp). silu(g)·up = g / (1 + e^-g) · up.
ZT_HD float swiglu(float gate, float up) {
  return mul_rn(div_rn(gate, add_rn(1.0f, cephes_exp(-gate))), up);
}
struct SwigluGrads {
  float dgate, dup;
};
// dgate = dout·up·σ·(1 + g·(1 − σ)), dup = dout·g·σ.
ZT_HD SwigluGrads swiglu_grads(float dout, float gate, float up) {
  const float sig = div_rn(1.0f, add_rn(1.0f, cephes_exp(-gate)));
  const float silu = mul_rn(gate, sig);
  const float slope = add_rn(1.0f, mul_rn(gate, sub_rn(1.0f, sig)));
  return {mul_rn(mul_rn(mul_rn(dout, up), sig), slope), mul_rn(dout, silu)};
}

// A running softmax denominator: s = Σ exp(x − m) over the values seen,
// m their max (-inf and s = 0 for none). Special values end as the CPU's
// two-pass max-then-sum ends: a NaN is skipped by the max but poisons s;
// -inf adds exp(-inf) = 0; +inf gives NaN (the CPU's exp(inf − inf));
// a row with no finite max gives a NaN log-sum-exp.
struct MaxSum {
  float m;
  float s;
};

ZT_HD MaxSum max_sum_add(MaxSum a, float x) {
  // exp(x − x) is 1, or NaN for an infinite x.
  if (x > a.m)
    return {x, add_rn(mul_rn(a.s, cephes_exp(sub_rn(a.m, x))), cephes_exp(sub_rn(x, x)))};
  if (x == -INFINITY) return a;
  return {a.m, add_rn(a.s, cephes_exp(sub_rn(x, a.m)))};
}

// Bitwise symmetric in a and b (no contraction: each product rounds), so
// a butterfly of combines leaves the same bits in every lane.
ZT_HD MaxSum max_sum_combine(MaxSum a, MaxSum b) {
  if (a.m == -INFINITY && b.m == -INFINITY) return {a.m, add_rn(a.s, b.s)};
  const float m = a.m > b.m ? a.m : b.m;
  return {m,
          add_rn(mul_rn(a.s, cephes_exp(sub_rn(a.m, m))), mul_rn(b.s, cephes_exp(sub_rn(b.m, m))))};
}

// log Σ exp(x) of the values a summarises.
ZT_HD float max_sum_log(MaxSum a) { return a.m == -INFINITY ? NAN : a.m + logf(a.s); }

}  // namespace zerotrain::device::cuda
