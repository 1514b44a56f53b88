// SwiGLU, the Llama-family MLP's gate: out = silu(gate) · up, with
// silu(x) = x·σ(x). The backward OVERWRITES dgate and dup (fresh scratch):
//   dgate = dout · up · σ(g)·(1 + g·(1 − σ(g))),   dup = dout · silu(g).
//
//   swiglu_forward(act, gate, up, B * T * I);
//   swiglu_backward(dgate, dup, dact, gate, up, B * T * I);
//
// Threads: OpenMP. Thread-safety: no shared state.
#pragma once

#include <cstdint>

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

}  // namespace zerotrain::device::cpu
