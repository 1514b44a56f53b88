// Causal multi-head self-attention, from the fused projection qkv [B,T,3C]
// (q, k, v side by side in the last dimension, heads of size hs = C/NH
// side by side within each) to out [B,T,C] before the output projection:
//   att = softmax_causal(q·kᵀ / √hs), out = att·v, per (b, head).
// B batch, T time, C channels, NH heads. The forward saves att (after
// softmax) for the backward. Each head is a few oneDNN GEMMs reading q, k,
// v in place inside qkv (leading dimension 3C); heads spread over the
// OpenMP threads. Backward ADDS into dqkv.
//
//   ZT_RETURN_IF_ERROR(attention_forward(y, att, qkv, B, T, C, NH));
//   ZT_RETURN_IF_ERROR(attention_backward(dqkv, dy, qkv, att, B, T, C, NH));
//   // or, keeping [B,NH,T] instead of [B,NH,T,T]:
//   ZT_RETURN_IF_ERROR(attention_forward_lse(y, lse, qkv, B, T, C, NH));
//   ZT_RETURN_IF_ERROR(attention_backward_lse(dqkv, dy, qkv, lse, B, T, C, NH));
//
// Memory: besides att (or lse), each OpenMP thread keeps two [64,T] fp32
// blocks (thread-local, reused across calls). Query rows go in blocks
// of 64 that only meet keys up to their last row, so the masked triangle
// is mostly skipped.
// Thread-safety: no shared state besides the (locked) GEMM primitive cache.
#pragma once

#include <cstdint>

#include "core/half.h"
#include "core/status.h"
#include "device/cpu/convert.h"

namespace zerotrain::device::cpu {

// InvalidArgument when C is not a multiple of NH; Internal on GEMM failure.
// att[b,h,t,t2] is 0 for t2 > t (the causal mask).
Status attention_forward(float* out,        // [B,T,C]
                         float* att,        // [B,NH,T,T] saved for backward
                         const float* qkv,  // [B,T,3C]
                         int64_t B, int64_t T, int64_t C, int64_t NH);

Status attention_backward(float* dqkv,        // [B,T,3C] +=
                          const float* dout,  // [B,T,C]
                          const float* qkv,   // [B,T,3C] forward input
                          const float* att,   // [B,NH,T,T] from forward
                          int64_t B, int64_t T, int64_t C, int64_t NH);

// Memory-lean pair: the forward keeps only lse[b,h,t] = log Σ_{j<=t}
// exp(q_t·k_j/√hs) instead of att, and the backward recomputes each block
// of att from q, k and lse (one extra GEMM per block; measured +5% for
// forward+backward at GPT-2 small, T=256) — O(T) saved memory per head
// instead of O(T²). Same results as the pair above up to fp32 rounding.
Status attention_forward_lse(float* out,        // [B,T,C]
                             float* lse,        // [B,NH,T] saved for backward
                             const float* qkv,  // [B,T,3C]
                             int64_t B, int64_t T, int64_t C, int64_t NH,
                             // [B,T] each query's first key (packed documents
                             // attend within their own); null: 0
                             const int32_t* first = nullptr);

Status attention_backward_lse(float* dqkv,        // [B,T,3C] +=
                              const float* dout,  // [B,T,C]
                              const float* qkv,   // [B,T,3C] forward input
                              const float* lse,   // [B,NH,T] from attention_forward_lse
                              int64_t B, int64_t T, int64_t C, int64_t NH,
                              const int32_t* first = nullptr);  // as the forward's

// The bf16 path's forms, as autocast runs attention: qkv as saved in bf16,
// every product bf16 x bf16 with fp32 accumulation (on AMX where oneDNN
// has it), softmax and its backward in fp32. att is rounded to bf16 for
// att·v and attᵀ·dy, d preatt for dq and dk; att and lse stay fp32. out
// and dqkv are written in bf16, rounded once from their fp32 sums (the
// next GEMM reads them in bf16 only), and dout comes in bf16. dqkv is
// overwritten (every element, heads own disjoint columns). Exactly one of
// att (the saved map, as attention_forward) and lse (as
// attention_forward_lse) is non-null, else InvalidArgument. Each thread
// keeps dense copies of a head's q, k, v (and dout, and its fp32 dq, dk,
// dv) and its [64,T] blocks: about 20·T·hs + 12·64·T bytes. first, as
// attention_forward_lse's (packed documents, sliding windows): with lse,
// a row block meets only the keys from its earliest first.
Status attention_forward_bf16(BFloat16* out,        // [B,T,C] bf16
                              float* att,           // [B,NH,T,T] or nullptr
                              float* lse,           // [B,NH,T] or nullptr
                              const BFloat16* qkv,  // [B,T,3C]
                              int64_t B, int64_t T, int64_t C, int64_t NH,
                              const int32_t* first = nullptr);

Status attention_backward_bf16(BFloat16* dqkv,        // [B,T,3C] bf16, overwritten
                               const BFloat16* dout,  // [B,T,C]
                               const BFloat16* qkv,   // [B,T,3C] forward input
                               const float* att,      // [B,NH,T,T] or nullptr
                               const float* lse,      // [B,NH,T] or nullptr
                               int64_t B, int64_t T, int64_t C, int64_t NH,
                               const int32_t* first = nullptr);

}  // namespace zerotrain::device::cpu
