// Ops: one table of every kernel the model families, the optimizers and
// ZeRO run on a device's memory. A device implements it (device/cpu/ wraps
// the CPU kernels; a CUDA device would launch its own on the compute
// stream); the same Ops tests run against every built device with the CPU
// ops as the oracle. Conventions (as the CPU kernels have them):
//   - pointers are the device's memory (or host memory for the host ops);
//   - contiguous row-major arrays, llm.c's dimension names (B batch, T
//     time, C channels, V vocab, Vp padded vocab, NH heads, OC out
//     channels);
//   - outputs first, then inputs, then sizes;
//   - backward ops ADD into gradients unless they say "overwritten";
//   - ops that can fail on user data (token ids, targets) or a library
//     return Status; ops returning a value to the host (sum_squares)
//     finish their work first.
//
//   const device::Ops& ops = device.ops();
//   ZT_RETURN_IF_ERROR(ops.linear_forward(y, x, w, b, B, T, C, OC));
//   ZT_RETURN_IF_ERROR(ops.convert(master, compute16));        // fp32 -> bf16, rounded
//
// Thread-safety: const; calls on distinct memory may run concurrently.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/half.h"
#include "core/status.h"
#include "core/tensor.h"
#include "device/matmul_desc.h"
#include "device/quant4.h"

namespace zerotrain::device {

// One fused Adam/AdamW step's scalars (optim/adam.h derives them from the
// options and the step number), DeepSpeed CPU-Adam semantics, per element:
//   g = grad_scale·grad; Adam mode: g += l2·p
//   m = beta1·m + (1-beta1)·g;  v = beta2·v + (1-beta2)·g²
//   AdamW mode: p = p·decay;  p -= step_size · m / (sqrt(v)·bc2_rsqrt + eps)
// and, when a copy is given, copy = dtype(p) rounded to nearest even.
struct AdamStep {
  float beta1, beta2;
  float one_minus_beta1, one_minus_beta2;
  float eps;
  float step_size;   // lr / (1 - beta1^t), or lr without bias correction
  float bc2_rsqrt;   // 1 / sqrt(1 - beta2^t), or 1
  float decay;       // 1 - lr * wd (AdamW mode)
  float l2;          // wd added to the grad as wd * p (Adam mode)
  bool decoupled;    // AdamW mode and wd > 0
  bool l2_mode;      // Adam mode and wd > 0
  float grad_scale;  // each grad is multiplied by it first (the engine's unscale and clip)
};

// SGD (torch semantics) per element: d = grad_scale·g + weight_decay·p;
// with momentum, buf = first ? d : momentum·buf + dampening_complement·d
// and d = nesterov ? d + momentum·buf : buf; p -= lr·d.
struct SgdStep {
  float lr, momentum, dampening_complement, weight_decay;
  bool use_momentum, first, nesterov;
  float grad_scale;
};

class Ops {
 public:
  virtual ~Ops() = default;

  // ---- Memory-wide element ops (ZeRO, the engine, the optimizers) ----
  // dst = src converted (fp32 -> fp16/bf16 rounds to nearest even, 16-bit
  // -> fp32 is exact, same dtype copies). Same numel; no overlap unless
  // dst and src are the same fp32 array (then a no-op).
  virtual Status convert(ConstTensor src, Tensor dst) const = 0;
  // dst = dtype(dst + src) element by element: src fp32, dst any dtype.
  virtual Status add(Tensor dst, ConstTensor src) const = 0;
  // out = float(dtype(in)): fp32 values rounded through dtype (a copy for
  // fp32). in and out fp32 of the same length; they may be the same.
  virtual Status round_through(DType dtype, ConstTensor in, Tensor out) const = 0;
  // x *= factor (fp32).
  virtual Status scale(Tensor x, float factor) const = 0;
  // Σ x² in double (x fp32, fp16 or bf16, each element widened exactly),
  // in fixed blocks in a fixed order: the same value for any thread count,
  // and for 16-bit x the same as for its fp32 widening. Returned to the host.
  virtual StatusOr<double> sum_squares(ConstTensor x) const = 0;
  // Narrows fp32 x (scaled by `scale` first) into wire-typed values over
  // x's own first bytes, in place (an fp32 wire only scales).
  virtual Status narrow_in_place(Tensor x, float scale, DType wire) const = 0;
  // dst[i] = scale · float(src[i]) for n wire-typed values at src (device
  // memory); dst may overlap src when it starts at or after it.
  virtual Status widen_in_place(const void* src, size_t n, DType wire, float scale,
                                float* dst) const = 0;

  // ---- Optimizers ----
  // n elements: params, moments fp32; grads fp32 or fp16/bf16 (grad_dtype);
  // copy (may be null) fp16/bf16 (copy_dtype) receives the new weights.
  virtual Status adam(const AdamStep& step, float* params, const void* grads, DType grad_dtype,
                      float* exp_avg, float* exp_avg_sq, void* copy, DType copy_dtype,
                      size_t n) const = 0;
  // momentum_buffer may be null when !step.use_momentum.
  virtual Status sgd(const SgdStep& step, float* params, const float* grads, float* momentum_buffer,
                     size_t n) const = 0;

  // ---- GEMM ----
  // C = alpha·op(A)·op(B) + bias + beta·C (matmul_desc.h).
  virtual Status matmul(const MatmulDesc& d, const float* a, const float* b, const float* bias,
                        float* c) const = 0;
  virtual Status matmul_bf16(const MatmulDesc& d, const BFloat16* a, const BFloat16* b,
                             const float* bias, float* c) const = 0;
  // C in bf16 (overwritten, rounded once).
  virtual Status matmul_bf16(const MatmulDesc& d, const BFloat16* a, const BFloat16* b,
                             const float* bias, BFloat16* c) const = 0;
  // out[i - begin] = the 4-bit tensor q's element i for i in [begin, end)
  // (quant4.h; QLoRA's frozen weights, dequantized a GEMM tile at a time).
  // Devices without the kernel refuse with the reason (the default).
  virtual Status dequantize_4bit(const Quant4View& q, int64_t begin, int64_t end,
                                 float* out) const;

  // ---- Transformer layers ----
  // Linear y = x·Wᵀ + b, W [OC,C]; backward adds dinp (dinp_accumulate;
  // else overwrites it; may be null), dweight, dbias (may be null).
  virtual Status linear_forward(float* out, const float* inp, const float* weight,
                                const float* bias, int64_t B, int64_t T, int64_t C,
                                int64_t OC) const = 0;
  virtual Status linear_forward_bf16(float* out, const BFloat16* inp, const BFloat16* weight,
                                     const float* bias, int64_t B, int64_t T, int64_t C,
                                     int64_t OC) const = 0;
  virtual Status linear_forward_bf16(BFloat16* out, const BFloat16* inp, const BFloat16* weight,
                                     const float* bias, int64_t B, int64_t T, int64_t C,
                                     int64_t OC) const = 0;
  virtual Status linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                 const float* inp, const float* weight, int64_t B, int64_t T,
                                 int64_t C, int64_t OC, bool dinp_accumulate) const = 0;
  virtual Status linear_backward_bf16(float* dinp, float* dweight, float* dbias,
                                      const BFloat16* dout, const BFloat16* inp,
                                      const BFloat16* weight, int64_t B, int64_t T, int64_t C,
                                      int64_t OC, bool dinp_accumulate) const = 0;
  // dinp = bf16(dout·weight), overwritten.
  virtual Status linear_backward_bf16(BFloat16* dinp, float* dweight, float* dbias,
                                      const BFloat16* dout, const BFloat16* inp,
                                      const BFloat16* weight, int64_t B, int64_t T, int64_t C,
                                      int64_t OC) const = 0;
  // Token + position embedding (wpe/dwpe null: the token embedding
  // alone); InvalidArgument naming (b, t) for a token outside [0, V).
  // positions [B,T] (packed documents restart at 0): the wpe rows, else t.
  virtual Status encoder_forward(float* out, const int32_t* tokens, const float* wte,
                                 const float* wpe, int64_t B, int64_t T, int64_t C, int64_t V,
                                 const int32_t* positions = nullptr) const = 0;
  virtual Status encoder_backward(float* dwte, float* dwpe, const float* dout,
                                  const int32_t* tokens, int64_t B, int64_t T, int64_t C,
                                  const int32_t* positions = nullptr) const = 0;
  // LayerNorm (eps 1e-5); mean/rstd may be null (inference).
  virtual Status layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                   const float* weight, const float* bias, int64_t B, int64_t T,
                                   int64_t C) const = 0;
  virtual Status layernorm_forward_bf16(BFloat16* out, float* mean, float* rstd, const float* inp,
                                        const float* weight, const float* bias, int64_t B,
                                        int64_t T, int64_t C) const = 0;
  virtual Status layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                    const float* inp, const float* weight, const float* mean,
                                    const float* rstd, int64_t B, int64_t T, int64_t C) const = 0;
  // RMSNorm (Llama family; rstd may be null for inference); the backward
  // adds into dinp and dweight.
  virtual Status rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                                 int64_t rows, int64_t C, float eps) const = 0;
  // out in bf16 (the next GEMM's operand), rounded once from the fp32 row.
  virtual Status rmsnorm_forward_bf16(BFloat16* out, float* rstd, const float* inp,
                                      const float* weight, int64_t rows, int64_t C,
                                      float eps) const = 0;
  virtual Status rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                  const float* weight, const float* rstd, int64_t rows,
                                  int64_t C) const = 0;
  // Rotary embedding of q and k (cos/sin [T, HD/2]) fused with grouped-query
  // packing into the attention's qkv [B,T,3·NH·HD] (kv heads repeated);
  // the backward overwrites dq, dk, dv (device/cpu/kernels/rope.h).
  // positions [B,T]: the table rows (packed documents restart at 0), else t.
  virtual Status rope_pack_qkv(float* qkv, const float* q, const float* k, const float* v,
                               const float* cos, const float* sin, int64_t B, int64_t T, int64_t NH,
                               int64_t NKV, int64_t HD,
                               const int32_t* positions = nullptr) const = 0;
  virtual Status rope_unpack_qkv_backward(float* dq, float* dk, float* dv, const float* dqkv,
                                          const float* cos, const float* sin, int64_t B, int64_t T,
                                          int64_t NH, int64_t NKV, int64_t HD,
                                          const int32_t* positions = nullptr) const = 0;
  // bf16 forms: q, k, v (and dqkv) in bf16 as their GEMMs keep them, the
  // rotation in fp32, every output rounded once.
  virtual Status rope_pack_qkv_bf16(BFloat16* qkv, const BFloat16* q, const BFloat16* k,
                                    const BFloat16* v, const float* cos, const float* sin,
                                    int64_t B, int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                                    const int32_t* positions = nullptr) const = 0;
  virtual Status rope_unpack_qkv_backward_bf16(BFloat16* dq, BFloat16* dk, BFloat16* dv,
                                               const BFloat16* dqkv, const float* cos,
                                               const float* sin, int64_t B, int64_t T, int64_t NH,
                                               int64_t NKV, int64_t HD,
                                               const int32_t* positions = nullptr) const = 0;
  // out = silu(gate)·up over N elements; the backward overwrites dgate, dup.
  virtual Status swiglu_forward(float* out, const float* gate, const float* up,
                                int64_t N) const = 0;
  virtual Status swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                                 const float* up, int64_t N) const = 0;
  // bf16 forms: gate, up and the outputs in bf16 (fp32 math), dout fp32.
  virtual Status swiglu_forward_bf16(BFloat16* out, const BFloat16* gate, const BFloat16* up,
                                     int64_t N) const = 0;
  virtual Status swiglu_backward_bf16(BFloat16* dgate, BFloat16* dup, const float* dout,
                                      const BFloat16* gate, const BFloat16* up,
                                      int64_t N) const = 0;
  // GELU (tanh approximation); backward adds (accumulate) or overwrites.
  virtual Status gelu_forward(float* out, const float* inp, int64_t N) const = 0;
  virtual Status gelu_backward(float* dinp, const float* inp, const float* dout, int64_t N,
                               bool accumulate) const = 0;
  virtual Status gelu_forward_bf16(BFloat16* out, const BFloat16* inp, int64_t N) const = 0;
  virtual Status gelu_backward_bf16(BFloat16* dinp, const BFloat16* inp, const float* dout,
                                    int64_t N) const = 0;
  // out = a + b over N elements.
  virtual Status residual_forward(float* out, const float* a, const float* b, int64_t N) const = 0;
  // y += a·x over N elements.
  virtual Status axpy(float* y, float a, const float* x, int64_t N) const = 0;
  // Causal self-attention from qkv [B,T,3C] with NH heads: the att-keeping
  // pair (att [B,NH,T,T]) and the lse-keeping pair (lse [B,NH,T]); the
  // backward adds into dqkv.
  virtual Status attention_forward(float* out, float* att, const float* qkv, int64_t B, int64_t T,
                                   int64_t C, int64_t NH) const = 0;
  virtual Status attention_backward(float* dqkv, const float* dout, const float* qkv,
                                    const float* att, int64_t B, int64_t T, int64_t C,
                                    int64_t NH) const = 0;
  // first [B,T]: each query's first key (packed documents attend only
  // within their own); null: 0.
  virtual Status attention_forward_lse(float* out, float* lse, const float* qkv, int64_t B,
                                       int64_t T, int64_t C, int64_t NH,
                                       const int32_t* first = nullptr) const = 0;
  virtual Status attention_backward_lse(float* dqkv, const float* dout, const float* qkv,
                                        const float* lse, int64_t B, int64_t T, int64_t C,
                                        int64_t NH, const int32_t* first = nullptr) const = 0;
  // Generation with a KV cache: n new tokens a row at positions
  // [pos, pos+n), packed qkv [B,n,3·NH·HD]; their keys and values go into
  // k_cache / v_cache [B,NKV,Tmax,HD], then each attends causally over the
  // cache (device/cpu/kernels/attention_decode.h); window > 0: position p
  // sees only keys p-window+1 .. p (a sliding window); row_first [B]
  // (device, null: 0): row b's keys start there (left-padded prompts; a
  // position before it gets zeros). InvalidArgument when pos + n > Tmax,
  // NKV does not divide NH or window < 0.
  virtual Status attention_decode(float* out, const float* qkv, float* k_cache, float* v_cache,
                                  int64_t B, int64_t n, int64_t pos, int64_t Tmax, int64_t NH,
                                  int64_t NKV, int64_t HD, int64_t window,
                                  const int32_t* row_first) const = 0;
  // The bf16 form (bf16 weights and KV cache): qkv, the caches and out in
  // bf16, scores, softmax and Σ p·v in fp32, the probabilities rounded to
  // bf16 for p·v and out rounded once (attention_forward_bf16's points).
  // The same checks.
  virtual Status attention_decode_bf16(BFloat16* out, const BFloat16* qkv, BFloat16* k_cache,
                                       BFloat16* v_cache, int64_t B, int64_t n, int64_t pos,
                                       int64_t Tmax, int64_t NH, int64_t NKV, int64_t HD,
                                       int64_t window, const int32_t* row_first) const = 0;
  // bf16 forms (autocast's rounding points); exactly one of att, lse is
  // non-null; dqkv is overwritten; first as attention_forward_lse's.
  virtual Status attention_forward_bf16(BFloat16* out, float* att, float* lse, const BFloat16* qkv,
                                        int64_t B, int64_t T, int64_t C, int64_t NH,
                                        const int32_t* first = nullptr) const = 0;
  virtual Status attention_backward_bf16(BFloat16* dqkv, const BFloat16* dout, const BFloat16* qkv,
                                         const float* att, const float* lse, int64_t B, int64_t T,
                                         int64_t C, int64_t NH,
                                         const int32_t* first = nullptr) const = 0;
  // Softmax cross-entropy over rows of logits [B,T,Vp] (V real columns);
  // negative targets are ignored; InvalidArgument naming (b, t) for a
  // target >= V. lse may be null. The fused forms write dlogits (may be
  // the logits themselves in fp32), overwritten, at unit dloss per token.
  virtual Status crossentropy_forward(float* losses, float* lse, const float* logits,
                                      const int32_t* targets, int64_t B, int64_t T, int64_t V,
                                      int64_t Vp) const = 0;
  virtual Status crossentropy_forward_backward(float* losses, float* dlogits, const float* logits,
                                               const int32_t* targets, float dloss, int64_t B,
                                               int64_t T, int64_t V, int64_t Vp) const = 0;
  virtual Status crossentropy_forward_backward_bf16(float* losses, BFloat16* dlogits,
                                                    const float* logits, const int32_t* targets,
                                                    float dloss, int64_t B, int64_t T, int64_t V,
                                                    int64_t Vp) const = 0;
};

}  // namespace zerotrain::device
