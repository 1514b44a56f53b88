// RMSNorm kernels (see rmsnorm.h). Row reductions in fp32 in cloned SIMD
// leaves, like LayerNorm's.
#include "device/cpu/kernels/rmsnorm.h"

#include <omp.h>

#include <cmath>
#include <vector>

#include "device/cpu/convert.h"
#include "device/cpu/kernels/vec_math.h"

namespace zerotrain::device::cpu {
namespace {

ZT_SIMD_CLONES void rms_row_forward(float* o, float* rstd, const float* x, const float* weight,
                                int64_t C, float eps) {
  float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
  for (int64_t c = 0; c < C; ++c) ss += x[c] * x[c];
  const float s = 1.0f / std::sqrt(ss / static_cast<float>(C) + eps);
#pragma omp simd
  for (int64_t c = 0; c < C; ++c) o[c] = weight[c] * (x[c] * s);
  if (rstd) *rstd = s;
}

ZT_SIMD_CLONES void rms_row_backward(float* dx, float* pw, const float* d, const float* x,
                                 const float* weight, float s, int64_t C) {
  float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
  for (int64_t c = 0; c < C; ++c) dot += d[c] * weight[c] * x[c];
  const float k = s * s * dot / static_cast<float>(C);
#pragma omp simd
  for (int64_t c = 0; c < C; ++c) {
    pw[c] += d[c] * x[c] * s;
    dx[c] += s * (d[c] * weight[c] - x[c] * k);
  }
}

}  // namespace

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t rows,
                     int64_t C, float eps) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows; ++i)
    rms_row_forward(out + i * C, rstd ? rstd + i : nullptr, inp + i * C, weight, C, eps);
}

void rmsnorm_forward_bf16(BFloat16* out, float* rstd, const float* inp, const float* weight,
                          int64_t rows, int64_t C, float eps) {
#pragma omp parallel
  {
    std::vector<float> row(static_cast<size_t>(C));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < rows; ++i) {
      rms_row_forward(row.data(), rstd ? rstd + i : nullptr, inp + i * C, weight, C, eps);
      bf16_from_float_array(out + i * C, row.data(), C);
    }
  }
}

void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, int64_t rows, int64_t C) {
  const int nth = omp_get_max_threads();
  std::vector<float> partial(static_cast<size_t>(nth) * static_cast<size_t>(C), 0.0f);
#pragma omp parallel num_threads(nth)
  {
    float* pw = partial.data() + static_cast<size_t>(omp_get_thread_num()) * C;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < rows; ++i)
      rms_row_backward(dinp + i * C, pw, dout + i * C, inp + i * C, weight, rstd[i], C);
  }
  for (int t = 0; t < nth; ++t) {
    const float* pw = partial.data() + static_cast<size_t>(t) * C;
    for (int64_t c = 0; c < C; ++c) dweight[c] += pw[c];
  }
}

}  // namespace zerotrain::device::cpu
