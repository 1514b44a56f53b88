// Token + position embedding (GPT-2's wte/wpe), forward and backward.
// Dimension names as in llm.c: B batch, T time, C channels, V vocab.
// Backward ADDS into the gradient buffers (zero them once per step).
//
//   ZT_RETURN_IF_ERROR(encoder_forward(x, tokens, wte, wpe, B, T, C, V));
//   encoder_backward(dwte, dwpe, dx, tokens, B, T, C);
//
// Threads: OpenMP. Thread-safety: no shared state; distinct buffers may be
// processed from different threads.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace zerotrain::device::cpu {

// out[b,t,:] = wte[inp[b,t],:] + wpe[t,:] (wpe null: no position
// embedding, the Llama family's token embedding alone).
// InvalidArgument naming (b, t) and the id when a token is outside [0, V).
Status encoder_forward(
    float* out,          // [B,T,C]
    const int32_t* inp,  // [B,T] token ids
    const float* wte,    // [V,C]
    const float* wpe,    // [maxT,C], maxT >= T, or nullptr
    int64_t B, int64_t T, int64_t C, int64_t V,
    const int32_t* positions = nullptr);  // [B,T] wpe rows (packed documents), else t

// dwte[inp[b,t],:] += dout[b,t,:] (scatter-add; repeated tokens sum);
// dwpe[t,:] += sum over b of dout[b,t,:] (unless dwpe is null). Tokens must be in range (forward
// checked them). Deterministic: each thread owns a slice of channels.
void encoder_backward(float* dwte,         // [V,C]
                      float* dwpe,         // [maxT,C] or nullptr
                      const float* dout,   // [B,T,C]
                      const int32_t* inp,  // [B,T]
                      int64_t B, int64_t T, int64_t C,
                      const int32_t* positions = nullptr);  // as the forward's

}  // namespace zerotrain::device::cpu
