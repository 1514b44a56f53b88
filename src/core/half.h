// Half and BFloat16 storage types and the portable scalar conversions to and
// from fp32. These are the reference the SIMD bulk paths (convert.h) must
// match bit for bit:
//   fp32 -> fp16: IEEE binary16, round-to-nearest-even, subnormals, overflow
//                 to inf; NaN -> quiet NaN keeping the top payload bits
//                 (sign | 0x7e00 | mantissa >> 13), as x86 VCVTPS2PH does.
//   fp16 -> fp32: exact; NaN -> quiet NaN (payload << 13 | quiet bit).
//   fp32 -> bf16: round-to-nearest-even on the upper 16 bits; NaN -> quiet
//                 NaN (bits >> 16 | 0x40) so a NaN never truncates to inf.
//   bf16 -> fp32: exact (bits << 16).
//
//   Half h = to_half(1.0f);      // h.bits == 0x3c00
//   float f = to_float(h);               // 1.0f
//
// Thread-safety: pure functions on values.
#pragma once

#include <bit>
#include <cstdint>

// The scalar conversions are also the CUDA kernels' (device/cuda/
// element_math.h): __host__ __device__ under nvcc, plain inline elsewhere.
#ifdef __CUDACC__
#define ZT_HOST_DEVICE __host__ __device__
#else
#define ZT_HOST_DEVICE
#endif

namespace zerotrain {

// IEEE binary16 bits. Trivially copyable, 2 bytes, so arrays of it can be
// sent over the wire and stored in checkpoints as raw bytes.
struct Half {
  uint16_t bits = 0;
  friend bool operator==(Half a, Half b) = default;
};

// bfloat16 bits (the upper half of an fp32).
struct BFloat16 {
  uint16_t bits = 0;
  friend bool operator==(BFloat16 a, BFloat16 b) = default;
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

ZT_HOST_DEVICE inline uint16_t fp32_to_fp16_bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x38800000u) {           // >= 2^-14: a normal half, or overflow to inf
    uint32_t m = abs - (112u << 23);  // rebias the exponent from 127 to 15
    m += 0xfffu + ((m >> 13) & 1u);   // round to nearest, ties to even
    m >>= 13;
    if (m > 0x7c00u) m = 0x7c00u;
    return static_cast<uint16_t>(sign | m);
  }
  // Subnormal half (units of 2^-24) or zero.
  const uint32_t exp = abs >> 23;
  const uint32_t shift = 126u - exp;  // >= 14 here
  if (shift > 24u) return static_cast<uint16_t>(sign);
  const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
  uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

ZT_HOST_DEVICE inline float fp16_bits_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) {
    const uint32_t quiet = mant != 0 ? 0x400000u : 0u;
    return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13) | quiet);
  }
  if (exp == 0) {
    // Subnormal: mant * 2^-24 is exact in fp32.
    const float magnitude = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

ZT_HOST_DEVICE inline uint16_t fp32_to_bf16_bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

ZT_HOST_DEVICE inline float bf16_bits_to_fp32(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

inline Half to_half(float value) { return Half{fp32_to_fp16_bits(value)}; }
inline BFloat16 to_bfloat16(float value) { return BFloat16{fp32_to_bf16_bits(value)}; }
inline float to_float(Half h) { return fp16_bits_to_fp32(h.bits); }
inline float to_float(BFloat16 b) { return bf16_bits_to_fp32(b.bits); }

}  // namespace zerotrain
