// Linear layer kernels (see linear.h): three GEMMs and a column sum.
#include "device/cpu/kernels/linear.h"

#include <omp.h>

#include <algorithm>

#include "device/cpu/kernels/matmul.h"

namespace zerotrain::device::cpu {

Status linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                      int64_t B, int64_t T, int64_t C, int64_t OC) {
  return matmul(MatmulDesc{.m = B * T, .n = OC, .k = C, .trans_b = true}, inp, weight, bias, out);
}

Status linear_forward_bf16(float* out, const BFloat16* inp, const BFloat16* weight,
                           const float* bias, int64_t B, int64_t T, int64_t C, int64_t OC) {
  return matmul_bf16(MatmulDesc{.m = B * T, .n = OC, .k = C, .trans_b = true}, inp, weight, bias,
                     out);
}

Status linear_forward_bf16(BFloat16* out, const BFloat16* inp, const BFloat16* weight,
                           const float* bias, int64_t B, int64_t T, int64_t C, int64_t OC) {
  return matmul_bf16(MatmulDesc{.m = B * T, .n = OC, .k = C, .trans_b = true}, inp, weight, bias,
                     out);
}

namespace {

// dbias[o] += Σ_rows dout[row, o]; parallel over output channels, each
// summing its column in row order. `at` (a lambda, so it inlines) reads one
// element as fp32. The 64 running sums of a block live in a local array
// the compiler keeps in vector registers.
template <typename T, typename At>
void add_column_sums(float* dbias, const T* dout, int64_t rows, int64_t OC, At at) {
  constexpr int64_t kBlock = 64;
#pragma omp parallel for schedule(static)
  for (int64_t o0 = 0; o0 < OC; o0 += kBlock) {
    const int64_t w = std::min(OC - o0, kBlock);
    float acc[kBlock];
    for (int64_t o = 0; o < w; ++o) acc[o] = dbias[o0 + o];
    if (w == kBlock) {
      for (int64_t i = 0; i < rows; ++i) {
        const T* d = dout + i * OC + o0;
        for (int64_t o = 0; o < kBlock; ++o) acc[o] += at(d[o]);
      }
    } else {
      for (int64_t i = 0; i < rows; ++i) {
        const T* d = dout + i * OC + o0;
        for (int64_t o = 0; o < w; ++o) acc[o] += at(d[o]);
      }
    }
    for (int64_t o = 0; o < w; ++o) dbias[o0 + o] = acc[o];
  }
}

// The three products of the backward, fp32 or bf16 operands alike.
template <typename T, typename Out, typename Gemm>
Status linear_backward_gemms(Out* dinp, float* dweight, const T* dout, const T* inp,
                             const T* weight, int64_t rows, int64_t C, int64_t OC, Gemm gemm,
                             bool dinp_accumulate) {
  if (dinp) {
    // dinp[rows,C] (+)= dout[rows,OC] · weight[OC,C]
    const float beta = dinp_accumulate ? 1.0f : 0.0f;
    ZT_RETURN_IF_ERROR(
        gemm(MatmulDesc{.m = rows, .n = C, .k = OC, .beta = beta}, dout, weight, nullptr, dinp));
  }
  // dweight[OC,C] += dout[rows,OC]ᵀ · inp[rows,C]
  ZT_RETURN_IF_ERROR(gemm(MatmulDesc{.m = OC, .n = C, .k = rows, .trans_a = true, .beta = 1.0f},
                          dout, inp, nullptr, dweight));
  return ok_status();
}

// matmul_bf16 into an fp32 or a bf16 C: one callable for linear_backward_gemms.
constexpr auto bf16_gemm = [](const MatmulDesc& d, const BFloat16* a, const BFloat16* b,
                              const float* bias, auto* c) { return matmul_bf16(d, a, b, bias, c); };

}  // namespace

Status linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, int64_t B, int64_t T, int64_t C,
                       int64_t OC, bool dinp_accumulate) {
  ZT_RETURN_IF_ERROR(linear_backward_gemms(dinp, dweight, dout, inp, weight, B * T, C, OC, matmul,
                                           dinp_accumulate));
  if (dbias) add_column_sums(dbias, dout, B * T, OC, [](float x) { return x; });
  return ok_status();
}

Status linear_backward_bf16(float* dinp, float* dweight, float* dbias, const BFloat16* dout,
                            const BFloat16* inp, const BFloat16* weight, int64_t B, int64_t T,
                            int64_t C, int64_t OC, bool dinp_accumulate) {
  ZT_RETURN_IF_ERROR(linear_backward_gemms(dinp, dweight, dout, inp, weight, B * T, C, OC,
                                           bf16_gemm, dinp_accumulate));
  if (dbias) add_column_sums(dbias, dout, B * T, OC, [](BFloat16 h) { return to_float(h); });
  return ok_status();
}

Status linear_backward_bf16(BFloat16* dinp, float* dweight, float* dbias, const BFloat16* dout,
                            const BFloat16* inp, const BFloat16* weight, int64_t B, int64_t T,
                            int64_t C, int64_t OC) {
  ZT_RETURN_IF_ERROR(linear_backward_gemms(dinp, dweight, dout, inp, weight, B * T, C, OC,
                                           bf16_gemm, /*dinp_accumulate=*/false));
  if (dbias) add_column_sums(dbias, dout, B * T, OC, [](BFloat16 h) { return to_float(h); });
  return ok_status();
}

}  // namespace zerotrain::device::cpu
