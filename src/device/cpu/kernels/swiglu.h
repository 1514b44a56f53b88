// SwiGLU, the Llama-family MLP's gate: out = silu(gate) · up, with
// silu(x) = x·σ(x). The backward OVERWRITES dgate and dup (fresh scratch):
//   dgate = dout · up · σ(g)·(1 + g·(1 − σ(g))),   dup = dout · silu(g).
//
//   swiglu_forward(act, gate, up, B * T * I);
//   swiglu_backward(dgate, dup, dact, gate, up, B * T * I);
//
// The bf16 forms (the bf16 Llama path): gate and up as their GEMMs saved
// them in bf16, the math in fp32, each output rounded once to bf16 (the
// next GEMM's operand); dout stays fp32 (the down projection's input
// gradient). σ is fast_exp's (about 1 ulp from expf).
//
// Threads: OpenMP. Thread-safety: no shared state.
#pragma once

#include <cstdint>

#include "core/half.h"

namespace zerotrain::device::cpu {

void swiglu_forward(float* out,         // [N]
                    const float* gate,  // [N]
                    const float* up,    // [N]
                    int64_t N);

void swiglu_backward(float* dgate,       // [N] overwritten
                     float* dup,         // [N] overwritten
                     const float* dout,  // [N]
                     const float* gate,  // [N]
                     const float* up,    // [N]
                     int64_t N);

void swiglu_forward_bf16(BFloat16* out, const BFloat16* gate, const BFloat16* up, int64_t N);
void swiglu_backward_bf16(BFloat16* dgate,     // [N] overwritten
                          BFloat16* dup,       // [N] overwritten
                          const float* dout,   // [N]
                          const BFloat16* gate, const BFloat16* up, int64_t N);

}  // namespace zerotrain::device::cpu
