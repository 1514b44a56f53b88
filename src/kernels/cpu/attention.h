// Causal multi-head self-attention, from the fused projection qkv [B,T,3C]
// (q, k, v side by side in the last dimension, heads of size hs = C/NH
// side by side within each) to out [B,T,C] before the output projection:
//   att = softmax_causal(q·kᵀ / √hs), out = att·v, per (b, head).
// B batch, T time, C channels, NH heads. The forward saves att (after
// softmax) for the backward. Per head, oneDNN GEMMs on head-major copies
// of q, k, v held in caller scratch; heads spread over the OpenMP threads.
// Backward ADDS into dqkv.
//
//   std::vector<float> scratch(attention_backward_scratch_floats(B, T, C, NH));
//   ZT_RETURN_IF_ERROR(attention_forward(y, att, qkv, scratch.data(), B, T, C, NH));
//   ZT_RETURN_IF_ERROR(attention_backward(dqkv, dy, qkv, att, scratch.data(), B, T, C, NH));
//
// Threads: oneDNN/OpenMP. Thread-safety: no shared state besides the
// (locked) GEMM primitive cache; concurrent calls need distinct scratch.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace zerotrain::kernels::cpu {

// Floats of scratch each call needs (the backward's is the larger).
int64_t attention_forward_scratch_floats(int64_t B, int64_t T, int64_t C);
int64_t attention_backward_scratch_floats(int64_t B, int64_t T, int64_t C, int64_t NH);

// InvalidArgument when C is not a multiple of NH; Internal on GEMM failure.
// att[b,h,t,t2] is 0 for t2 > t (the causal mask).
Status attention_forward(float* out,        // [B,T,C]
                         float* att,        // [B,NH,T,T] saved for backward
                         const float* qkv,  // [B,T,3C]
                         float* scratch,    // attention_forward_scratch_floats(..)
                         int64_t B, int64_t T, int64_t C, int64_t NH);

Status attention_backward(float* dqkv,        // [B,T,3C] +=
                          const float* dout,  // [B,T,C]
                          const float* qkv,   // [B,T,3C] forward input
                          const float* att,   // [B,NH,T,T] from forward
                          float* scratch,     // attention_backward_scratch_floats(..)
                          int64_t B, int64_t T, int64_t C, int64_t NH);

}  // namespace zerotrain::kernels::cpu
