// Test-only: an independent round-to-nearest-even reference in double
// precision for narrowing fp32 to fp16/bf16, written from the definition
// (scale to units of the target ulp, nearbyint, rescale) rather than from
// bit tricks, so it can check the bit-trick code in half.h.
#pragma once

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>

namespace zerotrain::testing {

struct Format {
  int precision;      // significant bits including the implicit one
  int min_exponent;   // exponent of the smallest normal (2^min_exponent)
  double max_finite;  // largest finite value
};

inline constexpr Format kFp16{11, -14, 65504.0};
inline constexpr Format kBf16{8, -126, 0x1.fep127};

// x rounded to the format, ties to even; overflow gives +-inf. x finite.
inline double round_to_format(double x, const Format& f) {
  if (x == 0.0) return x;
  const double a = std::fabs(x);
  int k = 0;
  std::frexp(a, &k);  // a = m * 2^k, m in [0.5, 1)
  const int e = std::max(k - 1, f.min_exponent);
  const double ulp = std::ldexp(1.0, e - (f.precision - 1));
  // The default rounding mode is to-nearest-even; the quotient is exact.
  double r = std::nearbyint(a / ulp) * ulp;
  if (r > f.max_finite) r = std::numeric_limits<double>::infinity();
  return std::copysign(r, x);
}

// Decodes fp16 bits from the definition (non-NaN only).
inline double decode_fp16(uint16_t h) {
  const int sign = (h >> 15) ? -1 : 1;
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  if (exp == 0x1f) return sign * std::numeric_limits<double>::infinity();
  if (exp == 0) return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(1024 + mant, exp - 25);
}

}  // namespace zerotrain::testing
