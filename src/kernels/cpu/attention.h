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
//
// Memory: besides att, each OpenMP thread keeps one [64,T] fp32 block for
// the backward (thread-local, reused across calls). Query rows go in blocks
// of 64 that only meet keys up to their last row, so the masked triangle
// is mostly skipped.
// Thread-safety: no shared state besides the (locked) GEMM primitive cache.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace zerotrain::kernels::cpu {

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

}  // namespace zerotrain::kernels::cpu
