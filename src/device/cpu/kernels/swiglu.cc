// SwiGLU kernels (see swiglu.h). σ from fast_exp, so the loops vectorise;
// the bf16 forms widen a block at a time, compute in fp32, and round once.
#include "device/cpu/kernels/swiglu.h"

#include <algorithm>

#include "device/cpu/convert.h"
#include "device/cpu/kernels/vec_math.h"

namespace zerotrain::device::cpu {
namespace {

// Elements a bf16 form widens at once (three 4 KiB fp32 blocks a thread).
constexpr int64_t kSwigluBlock = 1024;

ZT_SIMD_CLONES void swiglu_forward_block(float* out, const float* gate, const float* up,
                                         int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + fast_exp(-g)) * up[i];
  }
}

ZT_SIMD_CLONES void swiglu_backward_block(float* dgate, float* dup, const float* dout,
                                          const float* gate, const float* up, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    const float sig = 1.0f / (1.0f + fast_exp(-g));
    const float silu = g * sig;
    dup[i] = dout[i] * silu;
    dgate[i] = dout[i] * up[i] * sig * (1.0f + g * (1.0f - sig));
  }
}

}  // namespace

void swiglu_forward(float* out, const float* gate, const float* up, int64_t N) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; i += kSwigluBlock)
    swiglu_forward_block(out + i, gate + i, up + i, std::min(kSwigluBlock, N - i));
}

void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                     const float* up, int64_t N) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; i += kSwigluBlock) {
    swiglu_backward_block(dgate + i, dup + i, dout + i, gate + i, up + i,
                          std::min(kSwigluBlock, N - i));
  }
}

void swiglu_forward_bf16(BFloat16* out, const BFloat16* gate, const BFloat16* up, int64_t N) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; i += kSwigluBlock) {
    const int64_t n = std::min(kSwigluBlock, N - i);
    alignas(64) float g[kSwigluBlock], u[kSwigluBlock];
    float_from_bf16_array(g, gate + i, n);
    float_from_bf16_array(u, up + i, n);
    swiglu_forward_block(g, g, u, n);
    bf16_from_float_array(out + i, g, n);
  }
}

void swiglu_backward_bf16(BFloat16* dgate, BFloat16* dup, const float* dout, const BFloat16* gate,
                          const BFloat16* up, int64_t N) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; i += kSwigluBlock) {
    const int64_t n = std::min(kSwigluBlock, N - i);
    alignas(64) float g[kSwigluBlock], u[kSwigluBlock], dg[kSwigluBlock], du[kSwigluBlock];
    float_from_bf16_array(g, gate + i, n);
    float_from_bf16_array(u, up + i, n);
    swiglu_backward_block(dg, du, dout + i, g, u, n);
    bf16_from_float_array(dgate + i, dg, n);
    bf16_from_float_array(dup + i, du, n);
  }
}

}  // namespace zerotrain::device::cpu
