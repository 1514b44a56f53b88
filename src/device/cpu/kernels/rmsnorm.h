// RMSNorm (Llama, Mistral, Qwen2), forward and backward, as Hugging Face's
// LlamaRMSNorm computes it in fp32:
//   out = weight · x · rstd,   rstd = 1 / sqrt(mean(x²) + eps)   (per row).
// Backward ADDS into dinp and dweight:
//   dweight += Σ_rows dout · x · rstd
//   dinp    += rstd · (dout·weight − x · rstd² · mean(dout·weight·x)).
//
//   rmsnorm_forward(n, rstd, x, w, rows, C, 1e-5f);
//   rmsnorm_backward(dx, dw, dn, x, w, rstd, rows, C);
//
// Threads: OpenMP over rows; dweight by per-thread partial sums added in
// thread order (deterministic for a fixed thread count).
// Thread-safety: no shared state.
#pragma once

#include <cstdint>

#include "core/half.h"

namespace zerotrain::device::cpu {

// rstd may be null (inference).
void rmsnorm_forward(float* out,           // [rows, C]
                     float* rstd,          // [rows] or nullptr
                     const float* inp,     // [rows, C]
                     const float* weight,  // [C]
                     int64_t rows, int64_t C, float eps);

// The bf16 Llama path's form: out rounded once to bf16 (the next GEMM's
// operand) from the fp32 row the form above computes; rstd as above.
void rmsnorm_forward_bf16(BFloat16* out, float* rstd, const float* inp, const float* weight,
                          int64_t rows, int64_t C, float eps);

void rmsnorm_backward(float* dinp,          // [rows, C] +=
                      float* dweight,       // [C] +=
                      const float* dout,    // [rows, C]
                      const float* inp,     // [rows, C] forward input
                      const float* weight,  // [C]
                      const float* rstd,    // [rows] from the forward
                      int64_t rows, int64_t C);

}  // namespace zerotrain::device::cpu
