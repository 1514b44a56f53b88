// bf16 as the kernels carry it: raw bits (Bf16Bits = uint16_t), converted
// by tensor/'s round-to-nearest-even routines (NaN stays a quiet NaN); the
// array forms use tensor/'s run-time-dispatched SIMD conversions.
//
//   Bf16Bits h = kernels::cpu::bf16_from_float(1.5f);
//   float f = kernels::cpu::float_from_bf16(h);  // 1.5f
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>

#include "tensor/convert.h"
#include "tensor/half.h"

namespace zerotrain::kernels::cpu {

using Bf16Bits = uint16_t;
static_assert(sizeof(tensor::BFloat16) == sizeof(Bf16Bits));

inline Bf16Bits bf16_from_float(float f) { return tensor::fp32_to_bf16_bits(f); }
inline float float_from_bf16(Bf16Bits h) { return tensor::bf16_bits_to_fp32(h); }

// dst[i] = bf16(src[i]) for i < n.
inline void bf16_from_float_array(Bf16Bits* dst, const float* src, int64_t n) {
  tensor::fp32_to_bf16(std::span<const float>(src, static_cast<size_t>(n)),
                       std::span<tensor::BFloat16>(reinterpret_cast<tensor::BFloat16*>(dst),
                                                   static_cast<size_t>(n)));
}

// dst[i] = float(src[i]) for i < n (exact).
inline void float_from_bf16_array(float* dst, const Bf16Bits* src, int64_t n) {
  tensor::bf16_to_fp32(
      std::span<const tensor::BFloat16>(reinterpret_cast<const tensor::BFloat16*>(src),
                                        static_cast<size_t>(n)),
      std::span<float>(dst, static_cast<size_t>(n)));
}

}  // namespace zerotrain::kernels::cpu
