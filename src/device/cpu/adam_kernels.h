// Internal: the per-ISA fused Adam kernels behind adam.h. One call updates
// n contiguous elements in place, reading fp32, fp16 or bf16 grads, and,
// when copy_kind says so, writes the new weights as fp16 or bf16. All kernels evaluate the same
// float expression in the same order without FMA (the target is built with -ffp-contract=off), so
// every level gives the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace zerotrain::device::cpu::detail {

enum class CopyKind { kNone, kFp16, kBf16 };
enum class GradKind { kFp32, kFp16, kBf16 };

struct AdamKernelArgs {
  float beta1, beta2;
  float one_minus_beta1, one_minus_beta2;
  float eps;
  float step_size;   // lr / (1 - beta1^t), or lr without bias correction
  float bc2_rsqrt;   // 1 / sqrt(1 - beta2^t), or 1
  float decay;       // 1 - lr * wd (AdamW mode)
  float l2;          // wd added to the grad as wd * p (Adam mode)
  bool decoupled;    // AdamW mode and wd > 0
  bool l2_mode;      // Adam mode and wd > 0
  float grad_scale;  // each grad is multiplied by it first (the engine's unscale and clip)
  bool scale_grads;  // grad_scale != 1
  CopyKind copy_kind;
  GradKind grad_kind;
};

struct AdamKernelPtrs {
  float* params;
  const void* grads;  // float, or fp16/bf16 bits, per grad_kind
  float* exp_avg;
  float* exp_avg_sq;
  uint16_t* copy;  // fp16/bf16 bits, or null
};

// Pointers moved forward by i elements (grads by their own element size).
AdamKernelPtrs advance(const AdamKernelArgs& a, const AdamKernelPtrs& p, size_t i);

void adam_portable(const AdamKernelArgs& a, const AdamKernelPtrs& p, size_t n);
#if defined(__x86_64__)
void adam_avx2(const AdamKernelArgs& a, const AdamKernelPtrs& p, size_t n);
void adam_avx512(const AdamKernelArgs& a, const AdamKernelPtrs& p, size_t n);
#endif

}  // namespace zerotrain::device::cpu::detail
