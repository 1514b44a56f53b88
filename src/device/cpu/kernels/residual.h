// Residual connection out = inp1 + inp2, forward and backward (the gradient
// passes through to both branches). Backward ADDS into dinp1 and dinp2.
//
//   residual_forward(x2, x1, attn_out, N);
//   residual_backward(dx1, dattn_out, dx2, N);
//
// Threads: OpenMP. Thread-safety: no shared state.
#pragma once

#include <cstdint>

namespace zerotrain::device::cpu {

// out may alias inp1 or inp2 (in-place residual add).
void residual_forward(float* out,         // [N]
                      const float* inp1,  // [N]
                      const float* inp2,  // [N]
                      int64_t N);

void residual_backward(float* dinp1,       // [N] +=
                       float* dinp2,       // [N] +=
                       const float* dout,  // [N]
                       int64_t N);

}  // namespace zerotrain::device::cpu
