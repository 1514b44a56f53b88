// Linear layer y = x·Wᵀ + b (weight stored [OC,C] as in GPT-2 / llm.c),
// forward and backward through the oneDNN GEMM. B batch, T time, C input
// channels, OC output channels. Backward ADDS into dinp, dweight, dbias
// (beta = 1 GEMMs), so gradient accumulation over micro-batches is free.
//
//   ZT_RETURN_IF_ERROR(linear_forward(y, x, w, b, B, T, C, OC));
//   ZT_RETURN_IF_ERROR(linear_backward(dx, dw, db, dy, x, w, B, T, C, OC));
// The *_bf16 variants take bf16 operands and keep fp32 outputs and grads
// (or, in their BFloat16-output overloads, round the output or the input
// gradient to bf16; parameter gradients are always fp32).
//
// Threads: oneDNN/OpenMP. Thread-safety: no shared state besides the
// (locked) GEMM primitive cache.
#pragma once

#include <cstdint>

#include "core/half.h"
#include "core/status.h"
#include "device/cpu/convert.h"

namespace zerotrain::device::cpu {

// out = inp · weightᵀ + bias.
Status linear_forward(float* out,           // [B,T,OC]
                      const float* inp,     // [B,T,C]
                      const float* weight,  // [OC,C]
                      const float* bias,    // [OC] or nullptr
                      int64_t B, int64_t T, int64_t C, int64_t OC);

// Same with bf16 activations and weights (raw bits), fp32 accumulation and
// output: the bf16 mixed-precision forward.
Status linear_forward_bf16(float* out,              // [B,T,OC]
                           const BFloat16* inp,     // [B,T,C]
                           const BFloat16* weight,  // [OC,C]
                           const float* bias,       // [OC] or nullptr
                           int64_t B, int64_t T, int64_t C, int64_t OC);

// Same with the output rounded to bf16 (matmul_bf16 into a bf16 C): for
// outputs the next op only reads in bf16 (autocast's qkv, c_fc's output).
Status linear_forward_bf16(BFloat16* out,           // [B,T,OC] bf16
                           const BFloat16* inp,     // [B,T,C]
                           const BFloat16* weight,  // [OC,C]
                           const float* bias,       // [OC] or nullptr
                           int64_t B, int64_t T, int64_t C, int64_t OC);

// dinp += dout·weight; dweight += doutᵀ·inp; dbias += column sums of dout.
// dinp may be nullptr (input needs no gradient); dbias nullptr when the
// layer has no bias. dinp_accumulate false: dinp = dout·weight (no need to
// zero a fresh scratch first).
Status linear_backward(float* dinp,          // [B,T,C] += (or nullptr)
                       float* dweight,       // [OC,C] +=
                       float* dbias,         // [OC] += (or nullptr)
                       const float* dout,    // [B,T,OC]
                       const float* inp,     // [B,T,C]
                       const float* weight,  // [OC,C]
                       int64_t B, int64_t T, int64_t C, int64_t OC, bool dinp_accumulate = true);

// The bf16 backward: dout, inp and weight in bf16 (raw bits); the GEMMs
// accumulate in fp32 and the gradients stay fp32 (+=), as master grads.
Status linear_backward_bf16(float* dinp,             // [B,T,C] += (or nullptr)
                            float* dweight,          // [OC,C] +=
                            float* dbias,            // [OC] += (or nullptr)
                            const BFloat16* dout,    // [B,T,OC]
                            const BFloat16* inp,     // [B,T,C]
                            const BFloat16* weight,  // [OC,C]
                            int64_t B, int64_t T, int64_t C, int64_t OC,
                            bool dinp_accumulate = true);

// Same with dinp = bf16(dout·weight), overwritten (not accumulated): for an
// input gradient the next op only reads in bf16 (the attention's dout).
Status linear_backward_bf16(BFloat16* dinp,          // [B,T,C] = (or nullptr)
                            float* dweight,          // [OC,C] +=
                            float* dbias,            // [OC] += (or nullptr)
                            const BFloat16* dout,    // [B,T,OC]
                            const BFloat16* inp,     // [B,T,C]
                            const BFloat16* weight,  // [OC,C]
                            int64_t B, int64_t T, int64_t C, int64_t OC);

}  // namespace zerotrain::device::cpu
