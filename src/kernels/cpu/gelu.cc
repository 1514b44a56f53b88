// GELU kernels (see gelu.h).
#include "kernels/cpu/gelu.h"

#include <cmath>

namespace zerotrain::kernels::cpu {
namespace {
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;
}  // namespace

void gelu_forward(float* out, const float* inp, int64_t N) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < N; ++i) {
    const float x = inp[i];
    const float u = kGeluScale * (x + kGeluCubic * x * x * x);
    out[i] = 0.5f * x * (1.0f + std::tanh(u));
  }
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t N) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < N; ++i) {
    const float x = inp[i];
    const float u = kGeluScale * (x + kGeluCubic * x * x * x);
    const float th = std::tanh(u);
    const float sech2 = 1.0f - th * th;
    const float local =
        0.5f * (1.0f + th) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * kGeluCubic * x * x);
    dinp[i] += local * dout[i];
  }
}

}  // namespace zerotrain::kernels::cpu
