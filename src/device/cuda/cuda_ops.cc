// CudaOps (cuda_ops.h): each entry on the compute stream.
#include "device/cuda/cuda_ops.h"

#include <string>

#include "core/log.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/cuda_status.h"
#include "device/cuda/kernels/kernels.h"

namespace zerotrain::device::cuda {
namespace {

// The CPU GEMM's rules for a bf16 C (overwritten, rounded once).
Status check_bf16_output(const MatmulDesc& d, const float* bias) {
  if (d.beta != 0.0f)
    return invalid_argument(
        detail::concat("matmul_bf16 into a bf16 C overwrites it: beta must be 0, got ", d.beta));
  if (d.alpha != 1.0f && bias != nullptr)
    return invalid_argument("matmul_bf16 into a bf16 C: alpha must be 1 with a bias");
  return ok_status();
}

}  // namespace

StatusOr<std::unique_ptr<CudaOps>> CudaOps::create(CudaDevice& device) {
  ZT_RETURN_IF_ERROR(device.make_current());
  ZT_ASSIGN_OR_RETURN(std::unique_ptr<LtGemm> gemm, LtGemm::create());
  return std::unique_ptr<CudaOps>(new CudaOps(device, std::move(gemm)));
}

StatusOr<cudaStream_t> CudaOps::stream() const {
  ZT_RETURN_IF_ERROR(device_.make_current());
  return device_.compute_stream();
}

StatusOr<double> CudaOps::sum_squares(ConstTensor x) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  double result = 0;
  ZT_RETURN_IF_ERROR(kernels::sum_squares(s, x.dtype, x.data, x.numel, &result));
  return result;
}

// ---- GEMMs and linear layers (cuBLASLt) ----

Status CudaOps::matmul(const MatmulDesc& d, const float* a, const float* b, const float* bias,
                       float* c) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return gemm_->run(s, d, GemmType::kF32, a, b, bias, GemmType::kF32, c);
}

Status CudaOps::matmul_bf16(const MatmulDesc& d, const BFloat16* a, const BFloat16* b,
                            const float* bias, float* c) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return gemm_->run(s, d, GemmType::kBf16, a, b, bias, GemmType::kF32, c);
}

Status CudaOps::matmul_bf16(const MatmulDesc& d, const BFloat16* a, const BFloat16* b,
                            const float* bias, BFloat16* c) const {
  ZT_RETURN_IF_ERROR(check_bf16_output(d, bias));
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return gemm_->run(s, d, GemmType::kBf16, a, b, bias, GemmType::kBf16, c);
}

// out[BT,OC] = inp[BT,C]·weight[OC,C]ᵀ + bias
Status CudaOps::linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                               int64_t B, int64_t T, int64_t C, int64_t OC) const {
  return matmul(MatmulDesc{.m = B * T, .n = OC, .k = C, .trans_b = true}, inp, weight, bias, out);
}

Status CudaOps::linear_forward_bf16(float* out, const BFloat16* inp, const BFloat16* weight,
                                    const float* bias, int64_t B, int64_t T, int64_t C,
                                    int64_t OC) const {
  return matmul_bf16(MatmulDesc{.m = B * T, .n = OC, .k = C, .trans_b = true}, inp, weight, bias,
                     out);
}

Status CudaOps::linear_forward_bf16(BFloat16* out, const BFloat16* inp, const BFloat16* weight,
                                    const float* bias, int64_t B, int64_t T, int64_t C,
                                    int64_t OC) const {
  return matmul_bf16(MatmulDesc{.m = B * T, .n = OC, .k = C, .trans_b = true}, inp, weight, bias,
                     out);
}

// dinp[BT,C] (+)= dout[BT,OC]·weight[OC,C]; dweight[OC,C] += doutᵀ·inp;
// dbias[OC] += Σ_rows dout.
Status CudaOps::linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                const float* inp, const float* weight, int64_t B, int64_t T,
                                int64_t C, int64_t OC, bool dinp_accumulate) const {
  const int64_t BT = B * T;
  if (dinp != nullptr)
    ZT_RETURN_IF_ERROR(
        matmul(MatmulDesc{.m = BT, .n = C, .k = OC, .beta = dinp_accumulate ? 1.0f : 0.0f}, dout,
               weight, nullptr, dinp));
  ZT_RETURN_IF_ERROR(matmul(MatmulDesc{.m = OC, .n = C, .k = BT, .trans_a = true, .beta = 1.0f},
                            dout, inp, nullptr, dweight));
  if (dbias == nullptr) return ok_status();
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::bias_grad(s, dbias, dout, BT, OC);
}

Status CudaOps::linear_backward_bf16(float* dinp, float* dweight, float* dbias,
                                     const BFloat16* dout, const BFloat16* inp,
                                     const BFloat16* weight, int64_t B, int64_t T, int64_t C,
                                     int64_t OC, bool dinp_accumulate) const {
  const int64_t BT = B * T;
  if (dinp != nullptr)
    ZT_RETURN_IF_ERROR(
        matmul_bf16(MatmulDesc{.m = BT, .n = C, .k = OC, .beta = dinp_accumulate ? 1.0f : 0.0f},
                    dout, weight, nullptr, dinp));
  ZT_RETURN_IF_ERROR(
      matmul_bf16(MatmulDesc{.m = OC, .n = C, .k = BT, .trans_a = true, .beta = 1.0f}, dout, inp,
                  nullptr, dweight));
  if (dbias == nullptr) return ok_status();
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::bias_grad_bf16(s, dbias, dout, BT, OC);
}

Status CudaOps::linear_backward_bf16(BFloat16* dinp, float* dweight, float* dbias,
                                     const BFloat16* dout, const BFloat16* inp,
                                     const BFloat16* weight, int64_t B, int64_t T, int64_t C,
                                     int64_t OC) const {
  const int64_t BT = B * T;
  if (dinp != nullptr)
    ZT_RETURN_IF_ERROR(
        matmul_bf16(MatmulDesc{.m = BT, .n = C, .k = OC}, dout, weight, nullptr, dinp));
  ZT_RETURN_IF_ERROR(
      matmul_bf16(MatmulDesc{.m = OC, .n = C, .k = BT, .trans_a = true, .beta = 1.0f}, dout, inp,
                  nullptr, dweight));
  if (dbias == nullptr) return ok_status();
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::bias_grad_bf16(s, dbias, dout, BT, OC);
}

// ---- Everything else: the kernel of the same name ----

Status CudaOps::convert(ConstTensor src, Tensor dst) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::convert(s, src, dst);
}

Status CudaOps::add(Tensor dst, ConstTensor src) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::add(s, dst, src);
}

Status CudaOps::round_through(DType dtype, ConstTensor in, Tensor out) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::round_through(s, dtype, in, out);
}

Status CudaOps::scale(Tensor x, float factor) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::scale(s, x, factor);
}

Status CudaOps::narrow_in_place(Tensor x, float scale, DType wire) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::narrow_in_place(s, x, scale, wire);
}

Status CudaOps::widen_in_place(const void* src, size_t n, DType wire, float scale,
                               float* dst) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::widen_in_place(s, src, n, wire, scale, dst);
}

Status CudaOps::adam(const AdamStep& step, float* params, const void* grads, DType grad_dtype,
                     float* exp_avg, float* exp_avg_sq, void* copy, DType copy_dtype,
                     size_t n) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::adam(s, step, params, grads, grad_dtype, exp_avg, exp_avg_sq, copy, copy_dtype,
                       n);
}

Status CudaOps::sgd(const SgdStep& step, float* params, const float* grads, float* momentum_buffer,
                    size_t n) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::sgd(s, step, params, grads, momentum_buffer, n);
}

Status CudaOps::encoder_forward(float* out, const int32_t* tokens, const float* wte,
                                const float* wpe, int64_t B, int64_t T, int64_t C, int64_t V,
                                const int32_t* positions) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::encoder_forward(s, out, tokens, wte, wpe, B, T, C, V, positions);
}

Status CudaOps::encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                                 int64_t B, int64_t T, int64_t C, const int32_t* positions) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::encoder_backward(s, dwte, dwpe, dout, tokens, B, T, C, positions);
}

Status CudaOps::layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                  const float* weight, const float* bias, int64_t B, int64_t T,
                                  int64_t C) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::layernorm_forward(s, out, mean, rstd, inp, weight, bias, B, T, C);
}

Status CudaOps::layernorm_forward_bf16(BFloat16* out, float* mean, float* rstd, const float* inp,
                                       const float* weight, const float* bias, int64_t B, int64_t T,
                                       int64_t C) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::layernorm_forward_bf16(s, out, mean, rstd, inp, weight, bias, B, T, C);
}

Status CudaOps::layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                   const float* inp, const float* weight, const float* mean,
                                   const float* rstd, int64_t B, int64_t T, int64_t C) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::layernorm_backward(s, dinp, dweight, dbias, dout, inp, weight, mean, rstd, B, T,
                                     C);
}

Status CudaOps::rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                                int64_t rows, int64_t C, float eps) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::rmsnorm_forward(s, out, rstd, inp, weight, rows, C, eps);
}

Status CudaOps::rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                 const float* weight, const float* rstd, int64_t rows,
                                 int64_t C) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::rmsnorm_backward(s, dinp, dweight, dout, inp, weight, rstd, rows, C);
}

Status CudaOps::rope_pack_qkv(float* qkv, const float* q, const float* k, const float* v,
                              const float* cos, const float* sin, int64_t B, int64_t T, int64_t NH,
                              int64_t NKV, int64_t HD, const int32_t* positions) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::rope_pack_qkv(s, qkv, q, k, v, cos, sin, B, T, NH, NKV, HD, positions);
}

Status CudaOps::rope_unpack_qkv_backward(float* dq, float* dk, float* dv, const float* dqkv,
                                         const float* cos, const float* sin, int64_t B, int64_t T,
                                         int64_t NH, int64_t NKV, int64_t HD,
                                         const int32_t* positions) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::rope_unpack_qkv_backward(s, dq, dk, dv, dqkv, cos, sin, B, T, NH, NKV, HD,
                                           positions);
}

Status CudaOps::swiglu_forward(float* out, const float* gate, const float* up, int64_t N) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::swiglu_forward(s, out, gate, up, N);
}

Status CudaOps::swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                                const float* up, int64_t N) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::swiglu_backward(s, dgate, dup, dout, gate, up, N);
}

Status CudaOps::rmsnorm_forward_bf16(BFloat16* out, float* rstd, const float* inp,
                                    const float* weight, int64_t rows, int64_t C,
                                    float eps) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::rmsnorm_forward_bf16(s, out, rstd, inp, weight, rows, C, eps);
}

Status CudaOps::rope_pack_qkv_bf16(BFloat16* qkv, const BFloat16* q, const BFloat16* k,
                                  const BFloat16* v, const float* cos, const float* sin, int64_t B,
                                  int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                                  const int32_t* positions) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::rope_pack_qkv_bf16(s, qkv, q, k, v, cos, sin, B, T, NH, NKV, HD, positions);
}

Status CudaOps::rope_unpack_qkv_backward_bf16(BFloat16* dq, BFloat16* dk, BFloat16* dv,
                                             const BFloat16* dqkv, const float* cos,
                                             const float* sin, int64_t B, int64_t T, int64_t NH,
                                             int64_t NKV, int64_t HD,
                                             const int32_t* positions) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::rope_unpack_qkv_backward_bf16(s, dq, dk, dv, dqkv, cos, sin, B, T, NH, NKV, HD, positions);
}

Status CudaOps::swiglu_forward_bf16(BFloat16* out, const BFloat16* gate, const BFloat16* up,
                                   int64_t N) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::swiglu_forward_bf16(s, out, gate, up, N);
}

Status CudaOps::swiglu_backward_bf16(BFloat16* dgate, BFloat16* dup, const float* dout,
                                    const BFloat16* gate, const BFloat16* up, int64_t N) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::swiglu_backward_bf16(s, dgate, dup, dout, gate, up, N);
}

Status CudaOps::gelu_forward(float* out, const float* inp, int64_t N) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::gelu_forward(s, out, inp, N);
}

Status CudaOps::gelu_backward(float* dinp, const float* inp, const float* dout, int64_t N,
                              bool accumulate) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::gelu_backward(s, dinp, inp, dout, N, accumulate);
}

Status CudaOps::gelu_forward_bf16(BFloat16* out, const BFloat16* inp, int64_t N) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::gelu_forward_bf16(s, out, inp, N);
}

Status CudaOps::gelu_backward_bf16(BFloat16* dinp, const BFloat16* inp, const float* dout,
                                   int64_t N) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::gelu_backward_bf16(s, dinp, inp, dout, N);
}

Status CudaOps::residual_forward(float* out, const float* a, const float* b, int64_t N) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::residual_forward(s, out, a, b, N);
}

Status CudaOps::axpy(float* y, float a, const float* x, int64_t N) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::axpy(s, y, a, x, N);
}

Status CudaOps::dequantize_4bit(const Quant4View& q, int64_t begin, int64_t end,
                               float* out) const {
  if (begin < 0 || begin > end || end > q.numel)
    return invalid_argument("dequantize_4bit: range outside the tensor");
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::dequantize_4bit(s, q, begin, end, out);
}

Status CudaOps::attention_forward(float* out, float* att, const float* qkv, int64_t B, int64_t T,
                                  int64_t C, int64_t NH) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::attention_forward(s, out, att, qkv, B, T, C, NH);
}

Status CudaOps::attention_backward(float* dqkv, const float* dout, const float* qkv,
                                   const float* att, int64_t B, int64_t T, int64_t C,
                                   int64_t NH) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::attention_backward(s, dqkv, dout, qkv, att, B, T, C, NH);
}

Status CudaOps::attention_forward_lse(float* out, float* lse, const float* qkv, int64_t B,
                                      int64_t T, int64_t C, int64_t NH,
                                      const int32_t* first) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::attention_forward_lse(s, out, lse, qkv, B, T, C, NH, first);
}

Status CudaOps::attention_backward_lse(float* dqkv, const float* dout, const float* qkv,
                                       const float* lse, int64_t B, int64_t T, int64_t C,
                                       int64_t NH, const int32_t* first) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::attention_backward_lse(s, dqkv, dout, qkv, lse, B, T, C, NH, first);
}

Status CudaOps::attention_decode(float* out, const float* qkv, float* k_cache, float* v_cache,
                                 int64_t B, int64_t n, int64_t pos, int64_t Tmax, int64_t NH,
                                 int64_t NKV, int64_t HD, int64_t window,
                                 const int32_t* row_first) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::attention_decode(s, out, qkv, k_cache, v_cache, B, n, pos, Tmax, NH, NKV, HD,
                                   window, row_first);
}

Status CudaOps::attention_decode_bf16(BFloat16* out, const BFloat16* qkv, BFloat16* k_cache,
                                      BFloat16* v_cache, int64_t B, int64_t n, int64_t pos,
                                      int64_t Tmax, int64_t NH, int64_t NKV, int64_t HD,
                                      int64_t window, const int32_t* row_first) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::attention_decode_bf16(s, out, qkv, k_cache, v_cache, B, n, pos, Tmax, NH, NKV,
                                        HD, window, row_first);
}

Status CudaOps::attention_forward_bf16(BFloat16* out, float* att, float* lse, const BFloat16* qkv,
                                       int64_t B, int64_t T, int64_t C, int64_t NH,
                                       const int32_t* first) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::attention_forward_bf16(s, out, att, lse, qkv, B, T, C, NH, first);
}

Status CudaOps::attention_backward_bf16(BFloat16* dqkv, const BFloat16* dout, const BFloat16* qkv,
                                        const float* att, const float* lse, int64_t B, int64_t T,
                                        int64_t C, int64_t NH, const int32_t* first) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::attention_backward_bf16(s, dqkv, dout, qkv, att, lse, B, T, C, NH, first);
}

Status CudaOps::crossentropy_forward(float* losses, float* lse, const float* logits,
                                     const int32_t* targets, int64_t B, int64_t T, int64_t V,
                                     int64_t Vp) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::crossentropy_forward(s, losses, lse, logits, targets, B, T, V, Vp);
}

Status CudaOps::crossentropy_forward_backward(float* losses, float* dlogits, const float* logits,
                                              const int32_t* targets, float dloss, int64_t B,
                                              int64_t T, int64_t V, int64_t Vp) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::crossentropy_forward_backward(s, losses, dlogits, logits, targets, dloss, B, T, V,
                                                Vp);
}

Status CudaOps::crossentropy_forward_backward_bf16(float* losses, BFloat16* dlogits,
                                                   const float* logits, const int32_t* targets,
                                                   float dloss, int64_t B, int64_t T, int64_t V,
                                                   int64_t Vp) const {
  ZT_ASSIGN_OR_RETURN(cudaStream_t s, stream());
  return kernels::crossentropy_forward_backward_bf16(s, losses, dlogits, logits, targets, dloss, B,
                                                     T, V, Vp);
}

}  // namespace zerotrain::device::cuda
