// Umbrella header for the CPU kernels: every GPT-2 op's forward and
// backward plus the oneDNN GEMM. Conventions shared by all of them:
//   - contiguous fp32 row-major arrays, shapes in llm.c's names (B batch,
//     T time, C channels, V vocab, Vp padded vocab, NH heads, OC out channels);
//   - outputs first, then inputs, then sizes;
//   - backward functions ADD into gradient buffers (except the
//     cross-entropy backward, which writes dlogits);
//   - ops that call oneDNN or read user indices return Status.
//
//   #include "kernels/cpu/ops.h"
//   namespace kc = zerotrain::kernels::cpu;
//   ZT_RETURN_IF_ERROR(kc::linear_forward(y, x, w, b, B, T, C, OC));
//
// Thread-safety: see each header; none keeps state besides the GEMM cache.
#pragma once

#include "kernels/cpu/attention.h"
#include "kernels/cpu/bf16.h"
#include "kernels/cpu/crossentropy.h"
#include "kernels/cpu/encoder.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/layernorm.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/residual.h"
