// Residual kernels (see residual.h).
#include "device/cpu/kernels/residual.h"

namespace zerotrain::device::cpu {

void residual_forward(float* out, const float* inp1, const float* inp2, int64_t N) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < N; ++i) out[i] = inp1[i] + inp2[i];
}

void residual_backward(float* dinp1, float* dinp2, const float* dout, int64_t N) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < N; ++i) {
    dinp1[i] += dout[i];
    dinp2[i] += dout[i];
  }
}

}  // namespace zerotrain::device::cpu
