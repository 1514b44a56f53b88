// Bulk dtype conversions over arrays, SIMD where the CPU allows (AVX-512 or
// AVX2+F16C, picked at run time, see cpu_features.h) and the portable scalar
// code of half.h otherwise. Every path gives the same bits as half.h.
//
//   AlignedBuffer<float> master(n);  AlignedBuffer<BFloat16> model(n);
//   device::cpu::fp32_to_bf16(master.span(), model.span());
//   ZT_RETURN_IF_ERROR(device::cpu::convert(src_view, dst_view));   // any dtypes
//
// Preconditions: src and dst have the same length (checked: a mismatch is a
// bug and aborts) and do not overlap. Single-threaded: callers parallelise.
// Thread-safety: pure functions over caller memory.
#pragma once

#include <cstdint>
#include <span>

#include "core/half.h"
#include "core/status.h"
#include "core/tensor.h"

namespace zerotrain::device::cpu {

void fp32_to_fp16(std::span<const float> src, std::span<Half> dst);
void fp16_to_fp32(std::span<const Half> src, std::span<float> dst);
void fp32_to_bf16(std::span<const float> src, std::span<BFloat16> dst);
void bf16_to_fp32(std::span<const BFloat16> src, std::span<float> dst);

// Any dtype to any dtype (same dtype copies; fp16 <-> bf16 goes through fp32
// in blocks). InvalidArgument if the element counts differ.
Status convert(ConstTensor src, Tensor dst);

// The kernels' array forms (outputs first): dst[i] = bf16(src[i]), and
// dst[i] = float(src[i]) (exact), for i < n.
inline void bf16_from_float_array(BFloat16* dst, const float* src, int64_t n) {
  fp32_to_bf16({src, static_cast<size_t>(n)}, {dst, static_cast<size_t>(n)});
}
inline void float_from_bf16_array(float* dst, const BFloat16* src, int64_t n) {
  bf16_to_fp32({src, static_cast<size_t>(n)}, {dst, static_cast<size_t>(n)});
}

}  // namespace zerotrain::device::cpu
