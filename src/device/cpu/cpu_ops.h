// CpuOps: the Ops table of the CPU device — every entry forwards to the
// CPU kernels (device/cpu/kernels/, elementwise.h, optimizer_kernels.h)
// unchanged. Its pointers are host memory.
//
//   const device::Ops& ops = device::cpu::host_ops();   // a CpuOps
//
// Thread-safety: stateless; as the kernels.
#pragma once

#include "device/ops.h"

namespace zerotrain::device::cpu {

class CpuOps : public Ops {
 public:
  Status convert(ConstTensor src, Tensor dst) const override;
  Status add(Tensor dst, ConstTensor src) const override;
  Status round_through(DType dtype, ConstTensor in, Tensor out) const override;
  Status scale(Tensor x, float factor) const override;
  StatusOr<double> sum_squares(ConstTensor x) const override;
  Status narrow_in_place(Tensor x, float scale, DType wire) const override;
  Status widen_in_place(const void* src, size_t n, DType wire, float scale,
                        float* dst) const override;
  Status adam(const AdamStep& step, float* params, const void* grads, DType grad_dtype,
              float* exp_avg, float* exp_avg_sq, void* copy, DType copy_dtype,
              size_t n) const override;
  Status sgd(const SgdStep& step, float* params, const float* grads, float* momentum_buffer,
             size_t n) const override;
  Status matmul(const MatmulDesc& d, const float* a, const float* b, const float* bias,
                float* c) const override;
  Status matmul_bf16(const MatmulDesc& d, const BFloat16* a, const BFloat16* b, const float* bias,
                     float* c) const override;
  Status matmul_bf16(const MatmulDesc& d, const BFloat16* a, const BFloat16* b, const float* bias,
                     BFloat16* c) const override;
  Status dequantize_4bit(const Quant4View& q, int64_t begin, int64_t end,
                         float* out) const override;
  Status linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                        int64_t B, int64_t T, int64_t C, int64_t OC) const override;
  Status linear_forward_bf16(float* out, const BFloat16* inp, const BFloat16* weight,
                             const float* bias, int64_t B, int64_t T, int64_t C,
                             int64_t OC) const override;
  Status linear_forward_bf16(BFloat16* out, const BFloat16* inp, const BFloat16* weight,
                             const float* bias, int64_t B, int64_t T, int64_t C,
                             int64_t OC) const override;
  Status linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                         const float* inp, const float* weight, int64_t B, int64_t T, int64_t C,
                         int64_t OC, bool dinp_accumulate) const override;
  Status linear_backward_bf16(float* dinp, float* dweight, float* dbias, const BFloat16* dout,
                              const BFloat16* inp, const BFloat16* weight, int64_t B, int64_t T,
                              int64_t C, int64_t OC, bool dinp_accumulate) const override;
  Status linear_backward_bf16(BFloat16* dinp, float* dweight, float* dbias, const BFloat16* dout,
                              const BFloat16* inp, const BFloat16* weight, int64_t B, int64_t T,
                              int64_t C, int64_t OC) const override;
  Status encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                         int64_t B, int64_t T, int64_t C, int64_t V,
                         const int32_t* positions = nullptr) const override;
  Status encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                          int64_t B, int64_t T, int64_t C,
                          const int32_t* positions = nullptr) const override;
  Status layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                           const float* weight, const float* bias, int64_t B, int64_t T,
                           int64_t C) const override;
  Status layernorm_forward_bf16(BFloat16* out, float* mean, float* rstd, const float* inp,
                                const float* weight, const float* bias, int64_t B, int64_t T,
                                int64_t C) const override;
  Status layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                            const float* inp, const float* weight, const float* mean,
                            const float* rstd, int64_t B, int64_t T, int64_t C) const override;
  Status rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                         int64_t rows, int64_t C, float eps) const override;
  Status rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                          const float* weight, const float* rstd, int64_t rows,
                          int64_t C) const override;
  Status rope_pack_qkv(float* qkv, const float* q, const float* k, const float* v, const float* cos,
                       const float* sin, int64_t B, int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                       const int32_t* positions = nullptr) const override;
  Status rope_unpack_qkv_backward(float* dq, float* dk, float* dv, const float* dqkv,
                                  const float* cos, const float* sin, int64_t B, int64_t T,
                                  int64_t NH, int64_t NKV, int64_t HD,
                                  const int32_t* positions = nullptr) const override;
  Status swiglu_forward(float* out, const float* gate, const float* up, int64_t N) const override;
  Status swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                         const float* up, int64_t N) const override;
  Status rmsnorm_forward_bf16(BFloat16* out, float* rstd, const float* inp, const float* weight,
                              int64_t rows, int64_t C, float eps) const override;
  Status rope_pack_qkv_bf16(BFloat16* qkv, const BFloat16* q, const BFloat16* k,
                            const BFloat16* v, const float* cos, const float* sin, int64_t B,
                            int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                            const int32_t* positions = nullptr) const override;
  Status rope_unpack_qkv_backward_bf16(BFloat16* dq, BFloat16* dk, BFloat16* dv,
                                       const BFloat16* dqkv, const float* cos, const float* sin,
                                       int64_t B, int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                                       const int32_t* positions = nullptr) const override;
  Status swiglu_forward_bf16(BFloat16* out, const BFloat16* gate, const BFloat16* up,
                             int64_t N) const override;
  Status swiglu_backward_bf16(BFloat16* dgate, BFloat16* dup, const float* dout,
                              const BFloat16* gate, const BFloat16* up, int64_t N) const override;
  Status gelu_forward(float* out, const float* inp, int64_t N) const override;
  Status gelu_backward(float* dinp, const float* inp, const float* dout, int64_t N,
                       bool accumulate) const override;
  Status gelu_forward_bf16(BFloat16* out, const BFloat16* inp, int64_t N) const override;
  Status gelu_backward_bf16(BFloat16* dinp, const BFloat16* inp, const float* dout,
                            int64_t N) const override;
  Status residual_forward(float* out, const float* a, const float* b, int64_t N) const override;
  Status axpy(float* y, float a, const float* x, int64_t N) const override;
  Status attention_forward(float* out, float* att, const float* qkv, int64_t B, int64_t T,
                           int64_t C, int64_t NH) const override;
  Status attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att,
                            int64_t B, int64_t T, int64_t C, int64_t NH) const override;
  Status attention_decode(float* out, const float* qkv, float* k_cache, float* v_cache, int64_t B,
                          int64_t n, int64_t pos, int64_t Tmax, int64_t NH, int64_t NKV,
                          int64_t HD, int64_t window, const int32_t* row_first) const override;
  Status attention_decode_bf16(BFloat16* out, const BFloat16* qkv, BFloat16* k_cache,
                               BFloat16* v_cache, int64_t B, int64_t n, int64_t pos, int64_t Tmax,
                               int64_t NH, int64_t NKV, int64_t HD, int64_t window,
                               const int32_t* row_first) const override;
  Status attention_forward_lse(float* out, float* lse, const float* qkv, int64_t B, int64_t T,
                               int64_t C, int64_t NH,
                               const int32_t* first = nullptr) const override;
  Status attention_backward_lse(float* dqkv, const float* dout, const float* qkv, const float* lse,
                                int64_t B, int64_t T, int64_t C, int64_t NH,
                                const int32_t* first = nullptr) const override;
  Status attention_forward_bf16(BFloat16* out, float* att, float* lse, const BFloat16* qkv,
                                int64_t B, int64_t T, int64_t C, int64_t NH,
                                const int32_t* first = nullptr) const override;
  Status attention_backward_bf16(BFloat16* dqkv, const BFloat16* dout, const BFloat16* qkv,
                                 const float* att, const float* lse, int64_t B, int64_t T,
                                 int64_t C, int64_t NH,
                                 const int32_t* first = nullptr) const override;
  Status crossentropy_forward(float* losses, float* lse, const float* logits,
                              const int32_t* targets, int64_t B, int64_t T, int64_t V,
                              int64_t Vp) const override;
  Status crossentropy_forward_backward(float* losses, float* dlogits, const float* logits,
                                       const int32_t* targets, float dloss, int64_t B, int64_t T,
                                       int64_t V, int64_t Vp) const override;
  Status crossentropy_forward_backward_bf16(float* losses, BFloat16* dlogits, const float* logits,
                                            const int32_t* targets, float dloss, int64_t B,
                                            int64_t T, int64_t V, int64_t Vp) const override;
};

}  // namespace zerotrain::device::cpu
