// Scalar fp16/bf16 conversions (core/half.h): exhaustive over fp16, and
// fp32 -> fp16/bf16 rounding against an independent double-precision
// round-to-nearest-even reference on midpoints, near-midpoints and a large
// random sample.
#include "core/half.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "device/cpu/rounding_reference.h"

namespace zerotrain {
namespace {

using testing::decode_fp16;
using testing::kBf16;
using testing::kFp16;
using testing::round_to_format;

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
bool is_fp16_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool is_bf16_nan(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

// Checks fp32_to_fp16_bits(x) against the reference, bits including -0.
void expect_fp16_matches_reference(float x) {
  const uint16_t h = fp32_to_fp16_bits(x);
  const float expected = static_cast<float>(round_to_format(x, kFp16));
  ASSERT_EQ(bits_of(fp16_bits_to_fp32(h)), bits_of(expected))
      << "x=" << x << " (0x" << std::hex << bits_of(x) << ") -> 0x" << h;
}

void expect_bf16_matches_reference(float x) {
  const uint16_t b = fp32_to_bf16_bits(x);
  const float expected = static_cast<float>(round_to_format(x, kBf16));
  ASSERT_EQ(bits_of(bf16_bits_to_fp32(b)), bits_of(expected))
      << "x=" << x << " (0x" << std::hex << bits_of(x) << ") -> 0x" << b;
}

TEST(HalfTest, AllFp16PatternsRoundTripBitExactAndNaNStaysQuietNaN) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const float f = fp16_bits_to_fp32(h);
    const uint16_t back = fp32_to_fp16_bits(f);
    if (is_fp16_nan(h)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << i;
      ASSERT_TRUE(is_fp16_nan(back)) << std::hex << i;
      ASSERT_EQ(back, h | 0x0200) << std::hex << i;  // payload kept, quiet bit set
    } else {
      ASSERT_EQ(back, h) << std::hex << i;
      ASSERT_EQ(static_cast<double>(f), decode_fp16(h)) << std::hex << i;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << i;
    }
  }
}

TEST(HalfTest, Fp16KnownValues) {
  EXPECT_EQ(fp32_to_fp16_bits(1.0f), 0x3c00);
  EXPECT_EQ(fp32_to_fp16_bits(-2.0f), 0xc000);
  EXPECT_EQ(fp32_to_fp16_bits(65504.0f), 0x7bff);
  EXPECT_EQ(fp32_to_fp16_bits(65519.99f), 0x7bff);              // below the overflow midpoint
  EXPECT_EQ(fp32_to_fp16_bits(65520.0f), 0x7c00);               // tie to even is inf
  EXPECT_EQ(fp32_to_fp16_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(fp32_to_fp16_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: 0
  EXPECT_EQ(fp32_to_fp16_bits(std::ldexp(3.0f, -26)), 0x0001);  // 0.75 ulp rounds up
  EXPECT_EQ(fp32_to_fp16_bits(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp tie -> 2
  EXPECT_EQ(fp32_to_fp16_bits(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_fp16_bits(INFINITY), 0x7c00);
  EXPECT_EQ(fp32_to_fp16_bits(-INFINITY), 0xfc00);
  EXPECT_EQ(fp32_to_fp16_bits(1e-30f), 0x0000);
  // A NaN whose payload sits only in the low 13 bits must not become inf.
  EXPECT_EQ(fp32_to_fp16_bits(std::bit_cast<float>(0x7f800001u)), 0x7e00);
  EXPECT_EQ(fp32_to_fp16_bits(std::bit_cast<float>(0xffc00000u)), 0xfe00);
}

// Every value that sits exactly between two adjacent fp16 values, and its
// two fp32 neighbours, for both signs. This covers every rounding decision
// boundary, including subnormal/normal and max/inf.
TEST(HalfTest, Fp32ToFp16MidpointsAndNeighboursMatchReference) {
  int checked = 0;
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const double lo = decode_fp16(static_cast<uint16_t>(h));
    const double hi = h + 1 == 0x7c00 ? 65536.0 : decode_fp16(static_cast<uint16_t>(h + 1));
    const auto mid = static_cast<float>((lo + hi) / 2);  // 12 significant bits: exact
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2);
    for (float x :
         {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY), static_cast<float>(lo)}) {
      expect_fp16_matches_reference(x);
      expect_fp16_matches_reference(-x);
      checked += 2;
    }
  }
  EXPECT_EQ(checked, 0x7c00 * 8);
}

TEST(HalfTest, Fp32ToFp16RandomSampleMatchesReference) {
  std::mt19937 rng(1234);
  for (int i = 0; i < 2'000'000; ++i) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isnan(x)) {
      ASSERT_TRUE(is_fp16_nan(fp32_to_fp16_bits(x)));
      continue;
    }
    expect_fp16_matches_reference(x);
  }
  // Values in the fp16 range, where most decisions are non-trivial.
  std::uniform_real_distribution<float> in_range(-70000.0f, 70000.0f);
  std::uniform_real_distribution<float> exponent(-28.0f, 16.0f);
  for (int i = 0; i < 1'000'000; ++i) {
    expect_fp16_matches_reference(in_range(rng));
    expect_fp16_matches_reference(std::exp2(exponent(rng)));
  }
}

TEST(HalfTest, Bf16KnownValuesAndTies) {
  EXPECT_EQ(fp32_to_bf16_bits(1.0f), 0x3f80);
  // 1 + 2^-8 is the midpoint of 1 and 1 + 2^-7: tie to even (down, 0x3f80).
  EXPECT_EQ(fp32_to_bf16_bits(std::bit_cast<float>(0x3f808000u)), 0x3f80);
  // 1 + 3*2^-8 is the midpoint of 0x3f81 and 0x3f82: tie to even (up).
  EXPECT_EQ(fp32_to_bf16_bits(std::bit_cast<float>(0x3f818000u)), 0x3f82);
  EXPECT_EQ(fp32_to_bf16_bits(std::bit_cast<float>(0x3f808001u)), 0x3f81);  // above the tie
  EXPECT_EQ(fp32_to_bf16_bits(std::bit_cast<float>(0x3f807fffu)), 0x3f80);  // below
  EXPECT_EQ(fp32_to_bf16_bits(std::bit_cast<float>(0x7f7fffffu)), 0x7f80);  // max -> inf
  EXPECT_EQ(fp32_to_bf16_bits(-INFINITY), 0xff80);
  EXPECT_EQ(fp32_to_bf16_bits(-0.0f), 0x8000);
  // NaN with payload only in the low 16 bits stays NaN (quiet), never inf.
  EXPECT_EQ(fp32_to_bf16_bits(std::bit_cast<float>(0x7f800001u)), 0x7fc0);
  EXPECT_EQ(fp32_to_bf16_bits(std::bit_cast<float>(0xffc00000u)), 0xffc0);
  EXPECT_EQ(bf16_bits_to_fp32(0x3f80), 1.0f);
}

TEST(HalfTest, Bf16AllPatternsRoundTripAndMidpointsMatchReference) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto b = static_cast<uint16_t>(i);
    const float f = bf16_bits_to_fp32(b);
    ASSERT_EQ(bits_of(f), i << 16);
    const uint16_t back = fp32_to_bf16_bits(f);
    if (is_bf16_nan(b)) {
      ASSERT_EQ(back, b | 0x40) << std::hex << i;
      continue;
    }
    ASSERT_EQ(back, b) << std::hex << i;
    if ((b & 0x7fff) >= 0x7f80) continue;  // inf: no upper neighbour
    // Midpoint to the next pattern away from zero, and its neighbours.
    const uint32_t mid = (i << 16) | 0x8000u;
    for (uint32_t x : {mid, mid - 1, mid + 1})
      expect_bf16_matches_reference(std::bit_cast<float>(x));
  }
}

TEST(HalfTest, Bf16RandomSampleMatchesReference) {
  std::mt19937 rng(99);
  for (int i = 0; i < 2'000'000; ++i) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isnan(x)) {
      ASSERT_TRUE(is_bf16_nan(fp32_to_bf16_bits(x)));
      continue;
    }
    expect_bf16_matches_reference(x);
  }
}

TEST(HalfTest, WrapperTypesCarryBits) {
  EXPECT_EQ(to_half(0.5f).bits, 0x3800);
  EXPECT_EQ(to_bfloat16(0.5f).bits, 0x3f00);
  EXPECT_EQ(to_float(Half{0x3555}), fp16_bits_to_fp32(0x3555));
  EXPECT_EQ(to_float(BFloat16{0x4049}), bf16_bits_to_fp32(0x4049));
}

}  // namespace
}  // namespace zerotrain
