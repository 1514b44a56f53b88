// CpuOps: each entry is the CPU kernel of the same name (see cpu_ops.h).
#include "device/cpu/cpu_ops.h"

#include <string>

#include "device/cpu/dequant4.h"
#include "device/cpu/elementwise.h"
#include "device/cpu/kernels/ops.h"
#include "device/cpu/optimizer_kernels.h"
#include "device/op_checks.h"

namespace zerotrain::device::cpu {

Status CpuOps::convert(ConstTensor src, Tensor dst) const {
  ZT_RETURN_IF_ERROR(check_same_numel("convert", src, dst));
  convert_blocks(src.dtype, src.data, dst.dtype, dst.data, src.numel);
  return ok_status();
}

Status CpuOps::add(Tensor dst, ConstTensor src) const {
  ZT_RETURN_IF_ERROR(check_same_numel("add", src, dst));
  ZT_RETURN_IF_ERROR(check_fp32("add", src));
  add_rounded(dst.dtype, dst.data, src.ptr<float>(), src.numel);
  return ok_status();
}

Status CpuOps::round_through(DType dtype, ConstTensor in, Tensor out) const {
  ZT_RETURN_IF_ERROR(check_same_numel("round_through", in, out));
  ZT_RETURN_IF_ERROR(check_fp32("round_through", in));
  ZT_RETURN_IF_ERROR(check_fp32("round_through", out));
  cpu::round_through(dtype, in.ptr<float>(), out.ptr<float>(), in.numel);
  return ok_status();
}

Status CpuOps::scale(Tensor x, float factor) const {
  ZT_RETURN_IF_ERROR(check_fp32("scale", x));
  cpu::scale(x.ptr<float>(), x.numel, factor);
  return ok_status();
}

StatusOr<double> CpuOps::sum_squares(ConstTensor x) const {
  return cpu::sum_squares(x.dtype, x.data, x.numel);
}

Status CpuOps::narrow_in_place(Tensor x, float scale_by, DType wire) const {
  ZT_RETURN_IF_ERROR(check_fp32("narrow_in_place", x));
  cpu::narrow_in_place(x.ptr<float>(), x.numel, scale_by, wire);
  return ok_status();
}

Status CpuOps::widen_in_place(const void* src, size_t n, DType wire, float scale_by,
                              float* dst) const {
  cpu::widen_in_place(src, n, wire, scale_by, dst);
  return ok_status();
}

Status CpuOps::adam(const AdamStep& step, float* params, const void* grads, DType grad_dtype,
                    float* exp_avg, float* exp_avg_sq, void* copy, DType copy_dtype,
                    size_t n) const {
  adam_update(step, params, grads, grad_dtype, exp_avg, exp_avg_sq, copy, copy_dtype, n);
  return ok_status();
}

Status CpuOps::sgd(const SgdStep& step, float* params, const float* grads, float* momentum_buffer,
                   size_t n) const {
  sgd_update(step, params, grads, momentum_buffer, n);
  return ok_status();
}

Status CpuOps::matmul(const MatmulDesc& d, const float* a, const float* b, const float* bias,
                      float* c) const {
  return cpu::matmul(d, a, b, bias, c);
}

Status CpuOps::matmul_bf16(const MatmulDesc& d, const BFloat16* a, const BFloat16* b,
                           const float* bias, float* c) const {
  return cpu::matmul_bf16(d, a, b, bias, c);
}

Status CpuOps::matmul_bf16(const MatmulDesc& d, const BFloat16* a, const BFloat16* b,
                           const float* bias, BFloat16* c) const {
  return cpu::matmul_bf16(d, a, b, bias, c);
}

Status CpuOps::dequantize_4bit(const Quant4View& q, int64_t begin, int64_t end,
                              float* out) const {
  if (begin < 0 || begin > end || end > q.numel)
    return invalid_argument("dequantize_4bit: range outside the tensor");
  cpu::dequantize_4bit(q, begin, end, out);
  return ok_status();
}

Status CpuOps::linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                              int64_t B, int64_t T, int64_t C, int64_t OC) const {
  return cpu::linear_forward(out, inp, weight, bias, B, T, C, OC);
}

Status CpuOps::linear_forward_bf16(float* out, const BFloat16* inp, const BFloat16* weight,
                                   const float* bias, int64_t B, int64_t T, int64_t C,
                                   int64_t OC) const {
  return cpu::linear_forward_bf16(out, inp, weight, bias, B, T, C, OC);
}

Status CpuOps::linear_forward_bf16(BFloat16* out, const BFloat16* inp, const BFloat16* weight,
                                   const float* bias, int64_t B, int64_t T, int64_t C,
                                   int64_t OC) const {
  return cpu::linear_forward_bf16(out, inp, weight, bias, B, T, C, OC);
}

Status CpuOps::linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                               const float* inp, const float* weight, int64_t B, int64_t T,
                               int64_t C, int64_t OC, bool dinp_accumulate) const {
  return cpu::linear_backward(dinp, dweight, dbias, dout, inp, weight, B, T, C, OC,
                              dinp_accumulate);
}

Status CpuOps::linear_backward_bf16(float* dinp, float* dweight, float* dbias, const BFloat16* dout,
                                    const BFloat16* inp, const BFloat16* weight, int64_t B,
                                    int64_t T, int64_t C, int64_t OC, bool dinp_accumulate) const {
  return cpu::linear_backward_bf16(dinp, dweight, dbias, dout, inp, weight, B, T, C, OC,
                                   dinp_accumulate);
}

Status CpuOps::linear_backward_bf16(BFloat16* dinp, float* dweight, float* dbias,
                                    const BFloat16* dout, const BFloat16* inp,
                                    const BFloat16* weight, int64_t B, int64_t T, int64_t C,
                                    int64_t OC) const {
  return cpu::linear_backward_bf16(dinp, dweight, dbias, dout, inp, weight, B, T, C, OC);
}

Status CpuOps::encoder_forward(float* out, const int32_t* tokens, const float* wte,
                               const float* wpe, int64_t B, int64_t T, int64_t C, int64_t V,
                               const int32_t* positions) const {
  return cpu::encoder_forward(out, tokens, wte, wpe, B, T, C, V, positions);
}

Status CpuOps::encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                                int64_t B, int64_t T, int64_t C, const int32_t* positions) const {
  cpu::encoder_backward(dwte, dwpe, dout, tokens, B, T, C, positions);
  return ok_status();
}

Status CpuOps::layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                 const float* weight, const float* bias, int64_t B, int64_t T,
                                 int64_t C) const {
  cpu::layernorm_forward(out, mean, rstd, inp, weight, bias, B, T, C);
  return ok_status();
}

Status CpuOps::layernorm_forward_bf16(BFloat16* out, float* mean, float* rstd, const float* inp,
                                      const float* weight, const float* bias, int64_t B, int64_t T,
                                      int64_t C) const {
  cpu::layernorm_forward_bf16(out, mean, rstd, inp, weight, bias, B, T, C);
  return ok_status();
}

Status CpuOps::layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, const float* weight, const float* mean,
                                  const float* rstd, int64_t B, int64_t T, int64_t C) const {
  cpu::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, B, T, C);
  return ok_status();
}

Status CpuOps::rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                               int64_t rows, int64_t C, float eps) const {
  cpu::rmsnorm_forward(out, rstd, inp, weight, rows, C, eps);
  return ok_status();
}

Status CpuOps::rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                const float* weight, const float* rstd, int64_t rows,
                                int64_t C) const {
  cpu::rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, rows, C);
  return ok_status();
}

Status CpuOps::rope_pack_qkv(float* qkv, const float* q, const float* k, const float* v,
                             const float* cos, const float* sin, int64_t B, int64_t T, int64_t NH,
                             int64_t NKV, int64_t HD, const int32_t* positions) const {
  cpu::rope_pack_qkv(qkv, q, k, v, cos, sin, B, T, NH, NKV, HD, positions);
  return ok_status();
}

Status CpuOps::rope_unpack_qkv_backward(float* dq, float* dk, float* dv, const float* dqkv,
                                        const float* cos, const float* sin, int64_t B, int64_t T,
                                        int64_t NH, int64_t NKV, int64_t HD,
                                        const int32_t* positions) const {
  cpu::rope_unpack_qkv_backward(dq, dk, dv, dqkv, cos, sin, B, T, NH, NKV, HD, positions);
  return ok_status();
}

Status CpuOps::swiglu_forward(float* out, const float* gate, const float* up, int64_t N) const {
  cpu::swiglu_forward(out, gate, up, N);
  return ok_status();
}

Status CpuOps::swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                               const float* up, int64_t N) const {
  cpu::swiglu_backward(dgate, dup, dout, gate, up, N);
  return ok_status();
}

Status CpuOps::rmsnorm_forward_bf16(BFloat16* out, float* rstd, const float* inp,
                                    const float* weight, int64_t rows, int64_t C,
                                    float eps) const {
  cpu::rmsnorm_forward_bf16(out, rstd, inp, weight, rows, C, eps);
  return ok_status();
}

Status CpuOps::rope_pack_qkv_bf16(BFloat16* qkv, const BFloat16* q, const BFloat16* k,
                                  const BFloat16* v, const float* cos, const float* sin, int64_t B,
                                  int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                                  const int32_t* positions) const {
  cpu::rope_pack_qkv_bf16(qkv, q, k, v, cos, sin, B, T, NH, NKV, HD, positions);
  return ok_status();
}

Status CpuOps::rope_unpack_qkv_backward_bf16(BFloat16* dq, BFloat16* dk, BFloat16* dv,
                                             const BFloat16* dqkv, const float* cos,
                                             const float* sin, int64_t B, int64_t T, int64_t NH,
                                             int64_t NKV, int64_t HD,
                                             const int32_t* positions) const {
  cpu::rope_unpack_qkv_backward_bf16(dq, dk, dv, dqkv, cos, sin, B, T, NH, NKV, HD, positions);
  return ok_status();
}

Status CpuOps::swiglu_forward_bf16(BFloat16* out, const BFloat16* gate, const BFloat16* up,
                                   int64_t N) const {
  cpu::swiglu_forward_bf16(out, gate, up, N);
  return ok_status();
}

Status CpuOps::swiglu_backward_bf16(BFloat16* dgate, BFloat16* dup, const float* dout,
                                    const BFloat16* gate, const BFloat16* up, int64_t N) const {
  cpu::swiglu_backward_bf16(dgate, dup, dout, gate, up, N);
  return ok_status();
}

Status CpuOps::gelu_forward(float* out, const float* inp, int64_t N) const {
  cpu::gelu_forward(out, inp, N);
  return ok_status();
}

Status CpuOps::gelu_backward(float* dinp, const float* inp, const float* dout, int64_t N,
                             bool accumulate) const {
  cpu::gelu_backward(dinp, inp, dout, N, accumulate);
  return ok_status();
}

Status CpuOps::gelu_forward_bf16(BFloat16* out, const BFloat16* inp, int64_t N) const {
  cpu::gelu_forward_bf16(out, inp, N);
  return ok_status();
}

Status CpuOps::gelu_backward_bf16(BFloat16* dinp, const BFloat16* inp, const float* dout,
                                  int64_t N) const {
  cpu::gelu_backward_bf16(dinp, inp, dout, N);
  return ok_status();
}

Status CpuOps::residual_forward(float* out, const float* a, const float* b, int64_t N) const {
  cpu::residual_forward(out, a, b, N);
  return ok_status();
}

Status CpuOps::axpy(float* y, float a, const float* x, int64_t N) const {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; ++i) y[i] += a * x[i];
  return ok_status();
}

Status CpuOps::attention_forward(float* out, float* att, const float* qkv, int64_t B, int64_t T,
                                 int64_t C, int64_t NH) const {
  return cpu::attention_forward(out, att, qkv, B, T, C, NH);
}

Status CpuOps::attention_backward(float* dqkv, const float* dout, const float* qkv,
                                  const float* att, int64_t B, int64_t T, int64_t C,
                                  int64_t NH) const {
  return cpu::attention_backward(dqkv, dout, qkv, att, B, T, C, NH);
}

namespace {

Status check_decode(int64_t n, int64_t pos, int64_t Tmax, int64_t NH, int64_t NKV,
                    int64_t window) {
  if (pos < 0 || n < 1 || pos + n > Tmax || NKV < 1 || NH % NKV != 0 || window < 0) {
    return invalid_argument("attention_decode: positions [" + std::to_string(pos) + ", " +
                            std::to_string(pos + n) + ") in a cache of " + std::to_string(Tmax) +
                            ", " + std::to_string(NH) + " heads over " + std::to_string(NKV) +
                            " key/value heads, window " + std::to_string(window));
  }
  return ok_status();
}

}  // namespace

Status CpuOps::attention_decode(float* out, const float* qkv, float* k_cache, float* v_cache,
                                int64_t B, int64_t n, int64_t pos, int64_t Tmax, int64_t NH,
                                int64_t NKV, int64_t HD, int64_t window,
                                const int32_t* row_first) const {
  ZT_RETURN_IF_ERROR(check_decode(n, pos, Tmax, NH, NKV, window));
  cpu::attention_decode(out, qkv, k_cache, v_cache, B, n, pos, Tmax, NH, NKV, HD, window,
                        row_first);
  return ok_status();
}

Status CpuOps::attention_decode_bf16(BFloat16* out, const BFloat16* qkv, BFloat16* k_cache,
                                     BFloat16* v_cache, int64_t B, int64_t n, int64_t pos,
                                     int64_t Tmax, int64_t NH, int64_t NKV, int64_t HD,
                                     int64_t window, const int32_t* row_first) const {
  ZT_RETURN_IF_ERROR(check_decode(n, pos, Tmax, NH, NKV, window));
  cpu::attention_decode(out, qkv, k_cache, v_cache, B, n, pos, Tmax, NH, NKV, HD, window,
                        row_first);
  return ok_status();
}

Status CpuOps::attention_forward_lse(float* out, float* lse, const float* qkv, int64_t B, int64_t T,
                                     int64_t C, int64_t NH, const int32_t* first) const {
  return cpu::attention_forward_lse(out, lse, qkv, B, T, C, NH, first);
}

Status CpuOps::attention_backward_lse(float* dqkv, const float* dout, const float* qkv,
                                      const float* lse, int64_t B, int64_t T, int64_t C, int64_t NH,
                                      const int32_t* first) const {
  return cpu::attention_backward_lse(dqkv, dout, qkv, lse, B, T, C, NH, first);
}

Status CpuOps::attention_forward_bf16(BFloat16* out, float* att, float* lse, const BFloat16* qkv,
                                      int64_t B, int64_t T, int64_t C, int64_t NH,
                                      const int32_t* first) const {
  return cpu::attention_forward_bf16(out, att, lse, qkv, B, T, C, NH, first);
}

Status CpuOps::attention_backward_bf16(BFloat16* dqkv, const BFloat16* dout, const BFloat16* qkv,
                                       const float* att, const float* lse, int64_t B, int64_t T,
                                       int64_t C, int64_t NH, const int32_t* first) const {
  return cpu::attention_backward_bf16(dqkv, dout, qkv, att, lse, B, T, C, NH, first);
}

Status CpuOps::crossentropy_forward(float* losses, float* lse, const float* logits,
                                    const int32_t* targets, int64_t B, int64_t T, int64_t V,
                                    int64_t Vp) const {
  return cpu::crossentropy_forward(losses, lse, logits, targets, B, T, V, Vp);
}

Status CpuOps::crossentropy_forward_backward(float* losses, float* dlogits, const float* logits,
                                             const int32_t* targets, float dloss, int64_t B,
                                             int64_t T, int64_t V, int64_t Vp) const {
  return cpu::crossentropy_forward_backward(losses, dlogits, logits, targets, dloss, B, T, V, Vp);
}

Status CpuOps::crossentropy_forward_backward_bf16(float* losses, BFloat16* dlogits,
                                                  const float* logits, const int32_t* targets,
                                                  float dloss, int64_t B, int64_t T, int64_t V,
                                                  int64_t Vp) const {
  return cpu::crossentropy_forward_backward_bf16(losses, dlogits, logits, targets, dloss, B, T, V,
                                                 Vp);
}

}  // namespace zerotrain::device::cpu
