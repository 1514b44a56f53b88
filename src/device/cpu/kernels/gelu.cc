// GELU kernels (see gelu.h). tanh comes from fast_tanh so the loops
// vectorise (libm's tanhf is a scalar call); leaves are compiled for
// AVX-512 / AVX2 / baseline with run-time dispatch. The bf16 forms run the
// same fp32 leaves over L1-sized blocks, widened and rounded by tensor's
// SIMD conversions (16-bit loads and stores do not vectorise in the
// AVX-512F clone, which lacks AVX512BW).
#include "device/cpu/kernels/gelu.h"

#include <algorithm>

#include "device/cpu/kernels/vec_math.h"

namespace zerotrain::device::cpu {
namespace {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

ZT_SIMD_CLONES void gelu_forward_range(float* out, const float* inp, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float x = inp[i];
    const float u = kGeluScale * (x + kGeluCubic * x * x * x);
    out[i] = 0.5f * x * (1.0f + fast_tanh(u));
  }
}

// d gelu(x) / dx of the tanh form.
inline float gelu_slope(float x) {
  const float u = kGeluScale * (x + kGeluCubic * x * x * x);
  const float th = fast_tanh(u);
  const float sech2 = 1.0f - th * th;
  return 0.5f * (1.0f + th) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * kGeluCubic * x * x);
}

ZT_SIMD_CLONES void gelu_backward_range(float* dinp, const float* inp, const float* dout,
                                        int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dinp[i] += gelu_slope(inp[i]) * dout[i];
}

ZT_SIMD_CLONES void gelu_backward_set_range(float* dinp, const float* inp, const float* dout,
                                            int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dinp[i] = gelu_slope(inp[i]) * dout[i];
}

}  // namespace

void gelu_forward(float* out, const float* inp, int64_t N) {
  parallel_chunks(N,
                  [&](int64_t i0, int64_t i1) { gelu_forward_range(out + i0, inp + i0, i1 - i0); });
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t N, bool accumulate) {
  parallel_chunks(N, [&](int64_t i0, int64_t i1) {
    if (accumulate)
      gelu_backward_range(dinp + i0, inp + i0, dout + i0, i1 - i0);
    else
      gelu_backward_set_range(dinp + i0, inp + i0, dout + i0, i1 - i0);
  });
}

// fn(begin, count) over each thread's chunk of [0, N) in blocks of kBlock
// elements, whose fp32 forms fit in L1.
constexpr int64_t kBlock = 512;
template <typename Fn>
void parallel_blocks(int64_t N, Fn&& fn) {
  parallel_chunks(N, [&](int64_t i0, int64_t i1) {
    for (int64_t b = i0; b < i1; b += kBlock) fn(b, std::min(kBlock, i1 - b));
  });
}

void gelu_forward_bf16(BFloat16* out, const BFloat16* inp, int64_t N) {
  parallel_blocks(N, [&](int64_t b, int64_t n) {
    alignas(64) float x[kBlock], y[kBlock];
    float_from_bf16_array(x, inp + b, n);
    gelu_forward_range(y, x, n);
    bf16_from_float_array(out + b, y, n);
  });
}

void gelu_backward_bf16(BFloat16* dinp, const BFloat16* inp, const float* dout, int64_t N) {
  parallel_blocks(N, [&](int64_t b, int64_t n) {
    alignas(64) float x[kBlock], d[kBlock];
    float_from_bf16_array(x, inp + b, n);
    gelu_backward_set_range(d, x, dout + b, n);
    bf16_from_float_array(dinp + b, d, n);
  });
}

}  // namespace zerotrain::device::cpu
