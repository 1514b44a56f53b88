// LayerNorm kernels (see layernorm.h). Row statistics in fp32 with a
// two-pass variance, as llm.c does, so no catastrophic cancellation. Row
// loops are SIMD reductions in cloned (AVX-512 / AVX2 / baseline) leaves.
#include "device/cpu/kernels/layernorm.h"

#include <omp.h>

#include <cmath>
#include <vector>

#include "device/cpu/kernels/vec_math.h"

namespace zerotrain::device::cpu {
namespace {

ZT_SIMD_CLONES void row_forward(float* o, float* mean, float* rstd, const float* x,
                                const float* weight, const float* bias, int64_t C) {
  float m = 0.0f;
#pragma omp simd reduction(+ : m)
  for (int64_t c = 0; c < C; ++c) m += x[c];
  m /= static_cast<float>(C);
  float v = 0.0f;
#pragma omp simd reduction(+ : v)
  for (int64_t c = 0; c < C; ++c) v += (x[c] - m) * (x[c] - m);
  v /= static_cast<float>(C);
  const float s = 1.0f / std::sqrt(v + kLayerNormEps);
#pragma omp simd
  for (int64_t c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
  if (mean) *mean = m;
  if (rstd) *rstd = s;
}

// dx += row gradient; pw += norm·dout (dweight partial); pb += dout.
ZT_SIMD_CLONES void row_backward(float* dx, float* pw, float* pb, const float* d, const float* x,
                                 const float* weight, float m, float s, int64_t C) {
  float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_norm_mean)
  for (int64_t c = 0; c < C; ++c) {
    const float dnorm = weight[c] * d[c];
    dnorm_mean += dnorm;
    dnorm_norm_mean += dnorm * (x[c] - m) * s;
  }
  dnorm_mean /= static_cast<float>(C);
  dnorm_norm_mean /= static_cast<float>(C);
#pragma omp simd
  for (int64_t c = 0; c < C; ++c) {
    const float norm = (x[c] - m) * s;
    pb[c] += d[c];
    pw[c] += norm * d[c];
    dx[c] += (weight[c] * d[c] - dnorm_mean - norm * dnorm_norm_mean) * s;
  }
}

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int64_t B, int64_t T, int64_t C) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < B * T; ++i) {
    row_forward(out + i * C, mean ? mean + i : nullptr, rstd ? rstd + i : nullptr, inp + i * C,
                weight, bias, C);
  }
}

void layernorm_forward_bf16(BFloat16* out, float* mean, float* rstd, const float* inp,
                            const float* weight, const float* bias, int64_t B, int64_t T,
                            int64_t C) {
#pragma omp parallel
  {
    // Each row in fp32 (the same leaf as layernorm_forward), then rounded
    // by tensor's SIMD conversion: 16-bit stores do not vectorise in the
    // AVX-512F clone (no AVX512BW).
    std::vector<float> row(static_cast<size_t>(C));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < B * T; ++i) {
      row_forward(row.data(), mean ? mean + i : nullptr, rstd ? rstd + i : nullptr, inp + i * C,
                  weight, bias, C);
      bf16_from_float_array(out + i * C, row.data(), C);
    }
  }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        int64_t B, int64_t T, int64_t C) {
  const int64_t rows = B * T;
  const int nth = omp_get_max_threads();
  // Per-thread partial dweight/dbias, summed in thread order afterwards, so
  // the result is deterministic for a given thread count.
  std::vector<float> partial(static_cast<size_t>(nth) * 2 * C, 0.0f);
#pragma omp parallel num_threads(nth)
  {
    float* pw = partial.data() + static_cast<size_t>(omp_get_thread_num()) * 2 * C;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < rows; ++i) {
      row_backward(dinp + i * C, pw, pw + C, dout + i * C, inp + i * C, weight, mean[i], rstd[i],
                   C);
    }
  }
  for (int t = 0; t < nth; ++t) {
    const float* pw = partial.data() + static_cast<size_t>(t) * 2 * C;
    for (int64_t c = 0; c < C; ++c) {
      dweight[c] += pw[c];
      dbias[c] += pw[C + c];
    }
  }
}

}  // namespace zerotrain::device::cpu
