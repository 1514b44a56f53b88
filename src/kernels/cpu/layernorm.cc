// LayerNorm kernels (see layernorm.h). Row statistics in fp32 with a
// two-pass variance, as llm.c does, so no catastrophic cancellation.
#include "kernels/cpu/layernorm.h"

#include <omp.h>

#include <cmath>
#include <vector>

namespace zerotrain::kernels::cpu {

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int64_t B, int64_t T, int64_t C) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < B * T; ++i) {
    const float* x = inp + i * C;
    float m = 0.0f;
    for (int64_t c = 0; c < C; ++c) m += x[c];
    m /= static_cast<float>(C);
    float v = 0.0f;
    for (int64_t c = 0; c < C; ++c) v += (x[c] - m) * (x[c] - m);
    v /= static_cast<float>(C);
    const float s = 1.0f / std::sqrt(v + kLayerNormEps);
    float* o = out + i * C;
    for (int64_t c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
    if (mean) mean[i] = m;
    if (rstd) rstd[i] = s;
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
    float* pb = pw + C;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < rows; ++i) {
      const float* x = inp + i * C;
      const float* d = dout + i * C;
      const float m = mean[i], s = rstd[i];
      float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
      for (int64_t c = 0; c < C; ++c) {
        const float norm = (x[c] - m) * s;
        const float dnorm = weight[c] * d[c];
        dnorm_mean += dnorm;
        dnorm_norm_mean += dnorm * norm;
      }
      dnorm_mean /= static_cast<float>(C);
      dnorm_norm_mean /= static_cast<float>(C);
      float* dx = dinp + i * C;
      for (int64_t c = 0; c < C; ++c) {
        const float norm = (x[c] - m) * s;
        const float dnorm = weight[c] * d[c];
        pb[c] += d[c];
        pw[c] += norm * d[c];
        dx[c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
      }
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

}  // namespace zerotrain::kernels::cpu
