// The CUDA kernels' host launchers: one per Ops entry (ops.h has each
// op's contract; the CPU kernel of the same name in device/cpu/kernels/ is
// the oracle the conformance tests compare with), each enqueued on
// `stream` and returning a Status for a failed launch or bad user data.
// CudaOps (cuda_ops.h) calls them on the device's compute stream; the
// GEMMs and linear layers are cuBLASLt's (matmul.h), not here.
//
// Conventions beyond ops.h's:
//   - scratch memory comes from the stream-ordered pool (cudaMallocAsync /
//     cudaFreeAsync on `stream`), never from managed memory;
//   - reductions that feed gradients or norms run in a fixed order (no
//     float atomics), so two runs give the same bits;
//   - ops that validate user data (token ids, targets) record the first
//     bad index on the device and the host reads it back after the
//     kernel: those calls synchronize `stream`.
//
//   ZT_RETURN_IF_ERROR(kernels::gelu_forward(stream, out, inp, N));
//
// Thread-safety: as Ops; a launcher only touches the memory it is given.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/half.h"
#include "core/status.h"
#include "core/tensor.h"
#include "device/ops.h"

namespace zerotrain::device::cuda::kernels {

// ---- elementwise.cu ----
Status convert(cudaStream_t stream, ConstTensor src, Tensor dst);
Status add(cudaStream_t stream, Tensor dst, ConstTensor src);
Status round_through(cudaStream_t stream, DType dtype, ConstTensor in, Tensor out);
Status scale(cudaStream_t stream, Tensor x, float factor);
// Σ x² in double, in fixed blocks in a fixed order (deterministic); the
// host waits and *result receives it.
Status sum_squares(cudaStream_t stream, DType dtype, const void* x, size_t n, double* result);
Status narrow_in_place(cudaStream_t stream, Tensor x, float scale, DType wire);
Status widen_in_place(cudaStream_t stream, const void* src, size_t n, DType wire, float scale,
                      float* dst);
Status swiglu_forward(cudaStream_t stream, float* out, const float* gate, const float* up,
                      int64_t N);
Status swiglu_backward(cudaStream_t stream, float* dgate, float* dup, const float* dout,
                       const float* gate, const float* up, int64_t N);
Status swiglu_forward_bf16(cudaStream_t stream, BFloat16* out, const BFloat16* gate,
                           const BFloat16* up, int64_t N);
Status swiglu_backward_bf16(cudaStream_t stream, BFloat16* dgate, BFloat16* dup, const float* dout,
                            const BFloat16* gate, const BFloat16* up, int64_t N);
Status gelu_forward(cudaStream_t stream, float* out, const float* inp, int64_t N);
Status gelu_backward(cudaStream_t stream, float* dinp, const float* inp, const float* dout,
                     int64_t N, bool accumulate);
Status gelu_forward_bf16(cudaStream_t stream, BFloat16* out, const BFloat16* inp, int64_t N);
Status gelu_backward_bf16(cudaStream_t stream, BFloat16* dinp, const BFloat16* inp,
                          const float* dout, int64_t N);
Status residual_forward(cudaStream_t stream, float* out, const float* a, const float* b, int64_t N);
Status axpy(cudaStream_t stream, float* y, float a, const float* x, int64_t N);
// out = q's elements [begin, end) (quant4.h); every pointer in q is device memory.
Status dequantize_4bit(cudaStream_t stream, const Quant4View& q, int64_t begin, int64_t end,
                       float* out);

// ---- optimizer.cu ----
Status adam(cudaStream_t stream, const AdamStep& step, float* params, const void* grads,
            DType grad_dtype, float* exp_avg, float* exp_avg_sq, void* copy, DType copy_dtype,
            size_t n);
Status sgd(cudaStream_t stream, const SgdStep& step, float* params, const float* grads,
           float* momentum_buffer, size_t n);

// ---- layers.cu ----
Status encoder_forward(cudaStream_t stream, float* out, const int32_t* tokens, const float* wte,
                       const float* wpe, int64_t B, int64_t T, int64_t C, int64_t V,
                       const int32_t* positions);
Status encoder_backward(cudaStream_t stream, float* dwte, float* dwpe, const float* dout,
                        const int32_t* tokens, int64_t B, int64_t T, int64_t C,
                        const int32_t* positions);
Status layernorm_forward(cudaStream_t stream, float* out, float* mean, float* rstd,
                         const float* inp, const float* weight, const float* bias, int64_t B,
                         int64_t T, int64_t C);
Status layernorm_forward_bf16(cudaStream_t stream, BFloat16* out, float* mean, float* rstd,
                              const float* inp, const float* weight, const float* bias, int64_t B,
                              int64_t T, int64_t C);
Status layernorm_backward(cudaStream_t stream, float* dinp, float* dweight, float* dbias,
                          const float* dout, const float* inp, const float* weight,
                          const float* mean, const float* rstd, int64_t B, int64_t T, int64_t C);
Status rmsnorm_forward(cudaStream_t stream, float* out, float* rstd, const float* inp,
                       const float* weight, int64_t rows, int64_t C, float eps);
Status rmsnorm_forward_bf16(cudaStream_t stream, BFloat16* out, float* rstd, const float* inp,
                            const float* weight, int64_t rows, int64_t C, float eps);
Status rmsnorm_backward(cudaStream_t stream, float* dinp, float* dweight, const float* dout,
                        const float* inp, const float* weight, const float* rstd, int64_t rows,
                        int64_t C);
Status rope_pack_qkv(cudaStream_t stream, float* qkv, const float* q, const float* k,
                     const float* v, const float* cos, const float* sin, int64_t B, int64_t T,
                     int64_t NH, int64_t NKV, int64_t HD, const int32_t* positions);
Status rope_unpack_qkv_backward(cudaStream_t stream, float* dq, float* dk, float* dv,
                                const float* dqkv, const float* cos, const float* sin, int64_t B,
                                int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                                const int32_t* positions);
Status rope_pack_qkv_bf16(cudaStream_t stream, BFloat16* qkv, const BFloat16* q,
                          const BFloat16* k, const BFloat16* v, const float* cos, const float* sin,
                          int64_t B, int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                          const int32_t* positions);
Status rope_unpack_qkv_backward_bf16(cudaStream_t stream, BFloat16* dq, BFloat16* dk, BFloat16* dv,
                                     const BFloat16* dqkv, const float* cos, const float* sin,
                                     int64_t B, int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                                     const int32_t* positions);

// ---- crossentropy.cu ----
Status crossentropy_forward(cudaStream_t stream, float* losses, float* lse, const float* logits,
                            const int32_t* targets, int64_t B, int64_t T, int64_t V, int64_t Vp);
Status crossentropy_forward_backward(cudaStream_t stream, float* losses, float* dlogits,
                                     const float* logits, const int32_t* targets, float dloss,
                                     int64_t B, int64_t T, int64_t V, int64_t Vp);
Status crossentropy_forward_backward_bf16(cudaStream_t stream, float* losses, BFloat16* dlogits,
                                          const float* logits, const int32_t* targets, float dloss,
                                          int64_t B, int64_t T, int64_t V, int64_t Vp);

// ---- attention.cu ----
Status attention_forward(cudaStream_t stream, float* out, float* att, const float* qkv, int64_t B,
                         int64_t T, int64_t C, int64_t NH);
Status attention_backward(cudaStream_t stream, float* dqkv, const float* dout, const float* qkv,
                          const float* att, int64_t B, int64_t T, int64_t C, int64_t NH);
Status attention_forward_lse(cudaStream_t stream, float* out, float* lse, const float* qkv,
                             int64_t B, int64_t T, int64_t C, int64_t NH, const int32_t* first);
Status attention_backward_lse(cudaStream_t stream, float* dqkv, const float* dout, const float* qkv,
                              const float* lse, int64_t B, int64_t T, int64_t C, int64_t NH,
                              const int32_t* first);
Status attention_decode(cudaStream_t stream, float* out, const float* qkv, float* k_cache,
                        float* v_cache, int64_t B, int64_t n, int64_t pos, int64_t Tmax, int64_t NH,
                        int64_t NKV, int64_t HD, int64_t window, const int32_t* row_first);
Status attention_decode_bf16(cudaStream_t stream, BFloat16* out, const BFloat16* qkv,
                             BFloat16* k_cache, BFloat16* v_cache, int64_t B, int64_t n,
                             int64_t pos, int64_t Tmax, int64_t NH, int64_t NKV, int64_t HD,
                             int64_t window, const int32_t* row_first);
Status attention_forward_bf16(cudaStream_t stream, BFloat16* out, float* att, float* lse,
                              const BFloat16* qkv, int64_t B, int64_t T, int64_t C, int64_t NH,
                              const int32_t* first);
Status attention_backward_bf16(cudaStream_t stream, BFloat16* dqkv, const BFloat16* dout,
                               const BFloat16* qkv, const float* att, const float* lse, int64_t B,
                               int64_t T, int64_t C, int64_t NH, const int32_t* first);

// ---- matmul.cu (helpers of the cuBLASLt GEMMs) ----
// dbias[OC] += Σ_rows dout[rows, OC] (fp32 or bf16 dout), in a fixed order.
Status bias_grad(cudaStream_t stream, float* dbias, const float* dout, int64_t rows, int64_t OC);
Status bias_grad_bf16(cudaStream_t stream, float* dbias, const BFloat16* dout, int64_t rows,
                      int64_t OC);

// A GEMM with K = 0 (no product): column-major C[rows, cols] (ldc, `batch`
// of them, cols·ldc apart) = beta·C + bias[rows] per row.
// c is fp32, or bf16 when c_bf16 (then rounded once).
Status gemm_without_product(cudaStream_t stream, void* c, bool c_bf16, int64_t rows, int64_t cols,
                            int64_t ldc, int64_t batch, float beta, const float* bias);

}  // namespace zerotrain::device::cuda::kernels
