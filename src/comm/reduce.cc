// Reduction kernels and 16-bit float conversions for the comm layer.
#include "comm/reduce.h"

#include <cmath>
#include <cstring>

namespace zerotrain::comm {
namespace {

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Combines one element in fp32; NaN wins for max/min so overflow flags
// reduced with kMax are never lost.
inline float combine(float a, float b, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return a + b;
    case ReduceOp::kMax:
      return (std::isnan(a) || a >= b) ? a : b;
    case ReduceOp::kMin:
      return (std::isnan(a) || a <= b) ? a : b;
  }
  return a;
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void combine16(uint16_t* dst, const uint16_t* a, const uint16_t* b, size_t n, ReduceOp op,
               float div) {
  bool sum = op == ReduceOp::kSum || op == ReduceOp::kAvg;
  for (size_t i = 0; i < n; ++i) {
    float v = combine(Load(a[i]), Load(b[i]), op);
    dst[i] = Store(sum && div != 1.0f ? v / div : v);
  }
}

void combine32(float* dst, const float* a, const float* b, size_t n, ReduceOp op, float div) {
  if (op == ReduceOp::kSum || op == ReduceOp::kAvg) {
    // Separate loops so the common case vectorises cleanly.
    if (div == 1.0f) {
      for (size_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
    } else {
      for (size_t i = 0; i < n; ++i) dst[i] = (a[i] + b[i]) / div;
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) dst[i] = combine(a[i], b[i], op);
}

}  // namespace

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000 | (mant << 13));  // inf/NaN
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    // Subnormal: value = mant * 2^-24, exact in fp32.
    float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t float_to_half(float f) {
  uint32_t u = float_bits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  uint32_t abs = u & 0x7fffffff;
  if (abs > 0x7f800000) return sign | 0x7e00;   // NaN stays (quiet) NaN
  if (abs >= 0x477ff000) return sign | 0x7c00;  // rounds to >= 65520: inf
  if (abs < 0x38800000) {
    // Result is subnormal or zero: round abs * 2^24 to an integer, ties to even
    // (nearbyint uses the default round-to-nearest-even mode).
    float scaled = bits_float(abs) * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  // Normal: drop 13 mantissa bits with round to nearest even; a carry into
  // the exponent is the correct result.
  uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);
  return sign | static_cast<uint16_t>((rounded - (112u << 23)) >> 13);
}

float bf16_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

uint16_t float_to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

void reduce_combine(void* dst, const void* a, const void* b, size_t count, DType dtype, ReduceOp op,
                    int divisor) {
  float div = static_cast<float>(divisor);
  switch (dtype) {
    case DType::kFloat32:
      combine32(static_cast<float*>(dst), static_cast<const float*>(a),
                static_cast<const float*>(b), count, op, div);
      return;
    case DType::kFloat16:
      combine16<half_to_float, float_to_half>(static_cast<uint16_t*>(dst),
                                              static_cast<const uint16_t*>(a),
                                              static_cast<const uint16_t*>(b), count, op, div);
      return;
    case DType::kBFloat16:
      combine16<bf16_to_float, float_to_bf16>(static_cast<uint16_t*>(dst),
                                              static_cast<const uint16_t*>(a),
                                              static_cast<const uint16_t*>(b), count, op, div);
      return;
  }
}

void divide_inplace(void* data, size_t count, DType dtype, int divisor) {
  if (divisor == 1) return;
  float div = static_cast<float>(divisor);
  if (dtype == DType::kFloat32) {
    float* p = static_cast<float*>(data);
    for (size_t i = 0; i < count; ++i) p[i] /= div;
    return;
  }
  uint16_t* p = static_cast<uint16_t*>(data);
  bool half = dtype == DType::kFloat16;
  for (size_t i = 0; i < count; ++i) {
    float v = (half ? half_to_float(p[i]) : bf16_to_float(p[i])) / div;
    p[i] = half ? float_to_half(v) : float_to_bf16(v);
  }
}

}  // namespace zerotrain::comm
