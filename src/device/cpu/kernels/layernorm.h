// LayerNorm over the channel dimension (eps 1e-5, as GPT-2), forward saving
// mean and 1/std per row for the backward. B batch, T time, C channels.
// Backward ADDS into dinp, dweight, dbias (zero them once per step).
//
//   layernorm_forward(ln, mean, rstd, x, w, b, B, T, C);
//   layernorm_backward(dx, dw, db, dln, x, w, mean, rstd, B, T, C);
//
// Threads: OpenMP over rows. Thread-safety: no shared state.
#pragma once

#include <cstdint>

#include "core/half.h"
#include "device/cpu/convert.h"

namespace zerotrain::device::cpu {

inline constexpr float kLayerNormEps = 1e-5f;

// out = (inp - mean) * rstd * weight + bias per row; mean/rstd may be null
// (inference), otherwise they receive the row statistics.
void layernorm_forward(float* out,           // [B,T,C]
                       float* mean,          // [B,T] or nullptr
                       float* rstd,          // [B,T] or nullptr
                       const float* inp,     // [B,T,C]
                       const float* weight,  // [C]
                       const float* bias,    // [C]
                       int64_t B, int64_t T, int64_t C);

// The same with the output rounded to bf16 (the next GEMM's operand on the
// bf16 path): the bits of bf16(layernorm_forward's out).
void layernorm_forward_bf16(BFloat16* out,        // [B,T,C]
                            float* mean,          // [B,T] or nullptr
                            float* rstd,          // [B,T] or nullptr
                            const float* inp,     // [B,T,C]
                            const float* weight,  // [C]
                            const float* bias,    // [C]
                            int64_t B, int64_t T, int64_t C);

// Gradients of layernorm_forward given dout. dinp must not alias dout.
void layernorm_backward(float* dinp,          // [B,T,C] +=
                        float* dweight,       // [C] +=
                        float* dbias,         // [C] +=
                        const float* dout,    // [B,T,C]
                        const float* inp,     // [B,T,C]
                        const float* weight,  // [C]
                        const float* mean,    // [B,T] from forward
                        const float* rstd,    // [B,T] from forward
                        int64_t B, int64_t T, int64_t C);

}  // namespace zerotrain::device::cpu
