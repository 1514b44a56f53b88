// Linear layer kernels (see linear.h): three GEMMs and a column sum.
#include "kernels/cpu/linear.h"

#include <omp.h>

#include <algorithm>

#include "kernels/cpu/matmul.h"

namespace zerotrain::kernels::cpu {

Status linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                      int64_t B, int64_t T, int64_t C, int64_t OC) {
  return matmul(MatmulDesc{.m = B * T, .n = OC, .k = C, .trans_b = true}, inp, weight, bias, out);
}

Status linear_forward_bf16(float* out, const Bf16Bits* inp, const Bf16Bits* weight,
                           const float* bias, int64_t B, int64_t T, int64_t C, int64_t OC) {
  return matmul_bf16(MatmulDesc{.m = B * T, .n = OC, .k = C, .trans_b = true}, inp, weight, bias,
                     out);
}

Status linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, int64_t B, int64_t T, int64_t C,
                       int64_t OC) {
  const int64_t rows = B * T;
  if (dinp) {
    ZT_RETURN_IF_ERROR(
        matmul(MatmulDesc{.m = rows, .n = C, .k = OC, .beta = 1.0f}, dout, weight, nullptr, dinp));
  }
  ZT_RETURN_IF_ERROR(matmul(MatmulDesc{.m = OC, .n = C, .k = rows, .trans_a = true, .beta = 1.0f},
                            dout, inp, nullptr, dweight));
  if (dbias) {
    // Parallel over output channels; each sums its column in row order.
#pragma omp parallel for schedule(static)
    for (int64_t o0 = 0; o0 < OC; o0 += 64) {
      const int64_t o1 = std::min(OC, o0 + 64);
      for (int64_t i = 0; i < rows; ++i) {
        const float* d = dout + i * OC;
        for (int64_t o = o0; o < o1; ++o) dbias[o] += d[o];
      }
    }
  }
  return ok_status();
}

}  // namespace zerotrain::kernels::cpu
