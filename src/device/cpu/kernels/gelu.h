// GELU, tanh approximation (as GPT-2):
//   gelu(x) = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
// Backward ADDS into dinp. N is the element count (B·T·4C in GPT-2's MLP).
//
//   gelu_forward(h, pre, N);
//   gelu_backward(dpre, pre, dh, N);
//
// The *_bf16 forms are the bf16 path's (GptModel with bf16_compute, as
// autocast keeps c_fc's output in bf16): the input is saved rounded to
// bf16, and the outputs are the fp32 results above rounded to bf16 (round
// to nearest even) for the GEMM that reads them.
//
// Threads: OpenMP. Thread-safety: no shared state.
#pragma once

#include <cstdint>

#include "core/half.h"
#include "device/cpu/convert.h"

namespace zerotrain::device::cpu {

void gelu_forward(float* out,        // [N]
                  const float* inp,  // [N]
                  int64_t N);

// dinp += gelu'(inp) · dout (accumulate false: dinp =, for a fresh
// scratch). dinp must not alias dout.
void gelu_backward(float* dinp,        // [N] +=
                   const float* inp,   // [N] forward input
                   const float* dout,  // [N]
                   int64_t N, bool accumulate = true);

// out = bf16(gelu(inp)) at a bf16 input (autocast's c_fc output), in the
// forward and in the backward's recompute alike.
void gelu_forward_bf16(BFloat16* out,        // [N]
                       const BFloat16* inp,  // [N]
                       int64_t N);

// dinp = bf16(gelu'(inp) · dout), overwritten.
void gelu_backward_bf16(BFloat16* dinp,       // [N]
                        const BFloat16* inp,  // [N] the saved forward input
                        const float* dout,    // [N]
                        int64_t N);

}  // namespace zerotrain::device::cpu
