// GELU, tanh approximation (as GPT-2):
//   gelu(x) = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
// Backward ADDS into dinp. N is the element count (B·T·4C in GPT-2's MLP).
//
//   gelu_forward(h, pre, N);
//   gelu_backward(dpre, pre, dh, N);
//
// Threads: OpenMP. Thread-safety: no shared state.
#pragma once

#include <cstdint>

namespace zerotrain::kernels::cpu {

void gelu_forward(float* out,        // [N]
                  const float* inp,  // [N]
                  int64_t N);

// dinp += gelu'(inp) · dout (accumulate false: dinp =, for a fresh
// scratch). dinp must not alias dout.
void gelu_backward(float* dinp,        // [N] +=
                   const float* inp,   // [N] forward input
                   const float* dout,  // [N]
                   int64_t N, bool accumulate = true);

}  // namespace zerotrain::kernels::cpu
