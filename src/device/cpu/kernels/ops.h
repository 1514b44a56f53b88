// Umbrella header for the CPU kernels: every GPT-2 and Llama-family op's
// forward and backward plus the oneDNN GEMM. Conventions shared by all of them:
//   - contiguous fp32 row-major arrays, shapes in llm.c's names (B batch,
//     T time, C channels, V vocab, Vp padded vocab, NH heads, OC out channels);
//   - outputs first, then inputs, then sizes;
//   - backward functions ADD into gradient buffers (except the
//     cross-entropy backward, which writes dlogits);
//   - ops that call oneDNN or read user indices return Status.
//
//   #include "device/cpu/kernels/ops.h"
//   namespace kc = zerotrain::device::cpu;
//   ZT_RETURN_IF_ERROR(kc::linear_forward(y, x, w, b, B, T, C, OC));
//
// Thread-safety: see each header; none keeps state besides the GEMM cache.
#pragma once

#include "core/half.h"
#include "device/cpu/convert.h"
#include "device/cpu/kernels/attention.h"
#include "device/cpu/kernels/attention_decode.h"
#include "device/cpu/kernels/crossentropy.h"
#include "device/cpu/kernels/encoder.h"
#include "device/cpu/kernels/gelu.h"
#include "device/cpu/kernels/layernorm.h"
#include "device/cpu/kernels/linear.h"
#include "device/cpu/kernels/matmul.h"
#include "device/cpu/kernels/residual.h"
#include "device/cpu/kernels/rmsnorm.h"
#include "device/cpu/kernels/rope.h"
#include "device/cpu/kernels/swiglu.h"
