// bf16 <-> fp32 by bit manipulation (round to nearest even), local to the
// kernels layer so it does not depend on tensor/; the lead may unify the two.
// bf16 values are carried as raw bits (Bf16Bits = uint16_t).
//
//   Bf16Bits h = kernels::cpu::bf16_from_float(1.5f);
//   float f = kernels::cpu::float_from_bf16(h);  // 1.5f
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <cstring>

namespace zerotrain::kernels::cpu {

using Bf16Bits = uint16_t;

// Round to nearest, ties to even; NaN stays a (quiet) NaN.
inline Bf16Bits bf16_from_float(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<Bf16Bits>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<Bf16Bits>(u >> 16);
}

inline float float_from_bf16(Bf16Bits h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// dst[i] = bf16(src[i]) for i < n.
inline void bf16_from_float_array(Bf16Bits* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_from_float(src[i]);
}

// dst[i] = float(src[i]) for i < n (exact).
inline void float_from_bf16_array(float* dst, const Bf16Bits* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = float_from_bf16(src[i]);
}

}  // namespace zerotrain::kernels::cpu
