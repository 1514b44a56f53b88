// Fused softmax + cross-entropy over the vocabulary. B batch, T time, V
// vocab, Vp the padded row stride of logits (Vp >= V; columns V..Vp-1 are
// ignored, as with llm.c's padded vocab). A negative target marks a token
// that contributes neither loss nor gradient (padding).
// The forward keeps only the per-row log-sum-exp [B,T]; the backward
// recomputes the probabilities from the logits, so no V-sized buffer is
// materialised besides dlogits, which may be the logits buffer itself.
// Unlike the other backwards, dlogits is OVERWRITTEN (it starts the chain).
//
//   ZT_RETURN_IF_ERROR(crossentropy_forward(losses, lse, logits, targets, B, T, V, Vp));
//   crossentropy_backward(logits, logits, lse, targets, 1.0f / (B * T), B, T, V, Vp);
//
// Threads: OpenMP over rows. Thread-safety: no shared state.
#pragma once

#include <cstdint>

#include "core/half.h"
#include "core/status.h"
#include "device/cpu/convert.h"

namespace zerotrain::device::cpu {

// losses[b,t] = logsumexp(logits[b,t,:V]) - logits[b,t,targets[b,t]] (0 for a
// negative target). lse may be nullptr (evaluation). InvalidArgument naming
// (b, t) when a target is >= V.
Status crossentropy_forward(float* losses,           // [B,T]
                            float* lse,              // [B,T] or nullptr
                            const float* logits,     // [B,T,Vp]
                            const int32_t* targets,  // [B,T]
                            int64_t B, int64_t T, int64_t V, int64_t Vp);

// dlogits[b,t,v] = dloss · (softmax(logits[b,t,:V])[v] - [v == target]) for
// v < V, 0 for the padding columns and for rows with a negative target.
// dloss is dL/dlosses[b,t] for every token (1/(B·T) for the mean loss).
// Targets must be in range (the forward checked them).
void crossentropy_backward(float* dlogits,          // [B,T,Vp], may == logits
                           const float* logits,     // [B,T,Vp]
                           const float* lse,        // [B,T] from forward
                           const int32_t* targets,  // [B,T]
                           float dloss, int64_t B, int64_t T, int64_t V, int64_t Vp);

// Forward and backward in one pass over the logits (each row is read while
// still in cache). Same contracts as the two calls above.
Status crossentropy_forward_backward(float* losses,           // [B,T]
                                     float* dlogits,          // [B,T,Vp], may == logits
                                     const float* logits,     // [B,T,Vp]
                                     const int32_t* targets,  // [B,T]
                                     float dloss, int64_t B, int64_t T, int64_t V, int64_t Vp);

// The same with dlogits rounded to bf16 (the lm head's bf16 backward GEMM
// operand): the bits of bf16(crossentropy_forward_backward's dlogits).
Status crossentropy_forward_backward_bf16(float* losses,           // [B,T]
                                          BFloat16* dlogits,       // [B,T,Vp]
                                          const float* logits,     // [B,T,Vp]
                                          const int32_t* targets,  // [B,T]
                                          float dloss, int64_t B, int64_t T, int64_t V, int64_t Vp);

}  // namespace zerotrain::device::cpu
