// The attention's causal softmax rows (see attention_rows.h): SIMD leaves,
// compiled for AVX-512, AVX2 and baseline x86-64 with run-time dispatch.
#include "kernels/cpu/attention_rows.h"

#include <cmath>

#include "kernels/cpu/vec_math.h"

namespace zerotrain::kernels::cpu::attention_rows {

ZT_SIMD_CLONES void causal_softmax_rows(float* att, int64_t ld, int64_t t0, int64_t rows,
                                        int64_t width, float* lse) {
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t t = t0 + i;
    float* row = att + i * ld;
    float maxv = row[0];
#pragma omp simd reduction(max : maxv)
    for (int64_t j = 0; j <= t; ++j) maxv = row[j] > maxv ? row[j] : maxv;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j <= t; ++j) {
      row[j] = fast_exp(row[j] - maxv);
      sum += row[j];
    }
    const float inv = 1.0f / sum;
#pragma omp simd
    for (int64_t j = 0; j <= t; ++j) row[j] *= inv;
    for (int64_t j = t + 1; j < width; ++j) row[j] = 0.0f;
    if (lse) lse[i] = maxv + std::log(sum);
  }
}

ZT_SIMD_CLONES void causal_exp_rows(float* p, int64_t ld, int64_t t0, int64_t rows, int64_t width,
                                    const float* lse) {
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t t = t0 + i;
    float* row = p + i * ld;
    const float l = lse[i];
#pragma omp simd
    for (int64_t j = 0; j <= t; ++j) row[j] = fast_exp(row[j] - l);
    for (int64_t j = t + 1; j < width; ++j) row[j] = 0.0f;
  }
}

ZT_SIMD_CLONES void causal_softmax_backward_rows(float* datt, int64_t ldg, const float* att,
                                                 int64_t lda, int64_t t0, int64_t rows,
                                                 int64_t width) {
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t t = t0 + i;
    float* g = datt + i * ldg;
    const float* a = att + i * lda;
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t j = 0; j <= t; ++j) dot += a[j] * g[j];
#pragma omp simd
    for (int64_t j = 0; j <= t; ++j) g[j] = a[j] * (g[j] - dot);
    for (int64_t j = t + 1; j < width; ++j) g[j] = 0.0f;
  }
}

}  // namespace zerotrain::kernels::cpu::attention_rows
