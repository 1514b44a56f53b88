// Bulk conversions (device/cpu/convert.h): every SIMD level gives the same bits
// as the portable scalar code, on all 16-bit patterns, NaN payloads,
// boundary values, random data and lengths that leave SIMD tails.
#include "device/cpu/convert.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "device/cpu/aligned_buffer.h"
#include "device/cpu/convert_kernels.h"
#include "device/cpu/cpu_features.h"

namespace zerotrain::device::cpu {
namespace {

std::vector<SimdLevel> available_levels() {
  std::vector<SimdLevel> levels = {SimdLevel::kPortable};
  if (detected_simd_level() >= SimdLevel::kAvx2) levels.push_back(SimdLevel::kAvx2);
  if (detected_simd_level() >= SimdLevel::kAvx512) levels.push_back(SimdLevel::kAvx512);
  return levels;
}

// Floats that exercise every conversion branch, then random bit patterns.
std::vector<float> interesting_floats() {
  std::vector<uint32_t> bits = {0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7f800001,
                                0x7fc00000, 0xffc00001, 0x7fbfffff, 0x7f802000, 0x00000001,
                                0x007fffff, 0x33000000, 0x33000001, 0x387fe000, 0x38800000,
                                0x477fe000, 0x477ff000, 0x477fefff, 0x47800000, 0x7f7fffff,
                                0x3f808000, 0x3f818000, 0x3f807fff, 0x3f808001};
  for (uint32_t h = 0; h < 65536; ++h) {
    bits.push_back(std::bit_cast<uint32_t>(fp16_bits_to_fp32(static_cast<uint16_t>(h))) + 0x1000);
    bits.push_back(h << 16 | 0x8000);  // bf16 midpoints
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 300'000; ++i) bits.push_back(static_cast<uint32_t>(rng()));
  bits.push_back(0x3f800000);  // odd length: leaves a tail for every vector width
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = std::bit_cast<float>(bits[i]);
  return out;
}

TEST(ConvertTest, LevelsAreClampedToTheDetectedOne) {
  const SimdLevel best = detected_simd_level();
  std::printf("detected SIMD level: %s\n", std::string(simd_level_name(best)).c_str());
  {
    ScopedSimdLevel top(SimdLevel::kAvx512);
    EXPECT_EQ(top.active(), best);
    EXPECT_EQ(active_simd_level(), best);
    ScopedSimdLevel portable(SimdLevel::kPortable);
    EXPECT_EQ(active_simd_level(), SimdLevel::kPortable);
  }
  EXPECT_EQ(active_simd_level(), best);
  EXPECT_EQ(simd_level_name(SimdLevel::kAvx2), "avx2");
}

TEST(ConvertTest, Fp32ToHalfAndBf16AgreeBitForBitAcrossLevels) {
  const std::vector<float> src = interesting_floats();
  std::vector<uint16_t> want16(src.size()), wantb(src.size());
  detail::fp32_to_fp16_portable(src.data(), want16.data(), src.size());
  detail::fp32_to_bf16_portable(src.data(), wantb.data(), src.size());
  for (SimdLevel level : available_levels()) {
    ScopedSimdLevel scoped(level);
    std::vector<Half> got16(src.size());
    std::vector<BFloat16> gotb(src.size());
    fp32_to_fp16(src, got16);
    fp32_to_bf16(src, gotb);
    for (size_t i = 0; i < src.size(); ++i) {
      ASSERT_EQ(got16[i].bits, want16[i])
          << simd_level_name(level) << " fp16 of 0x" << std::hex << std::bit_cast<uint32_t>(src[i]);
      ASSERT_EQ(gotb[i].bits, wantb[i])
          << simd_level_name(level) << " bf16 of 0x" << std::hex << std::bit_cast<uint32_t>(src[i]);
    }
  }
}

TEST(ConvertTest, AllHalfAndBf16PatternsWidenIdenticallyAcrossLevels) {
  std::vector<Half> h(65536 + 5);
  std::vector<BFloat16> b(h.size());
  for (size_t i = 0; i < h.size(); ++i) {
    h[i].bits = static_cast<uint16_t>(i);
    b[i].bits = static_cast<uint16_t>(i);
  }
  for (SimdLevel level : available_levels()) {
    ScopedSimdLevel scoped(level);
    std::vector<float> fh(h.size()), fb(b.size());
    fp16_to_fp32(h, fh);
    bf16_to_fp32(b, fb);
    for (size_t i = 0; i < h.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(fh[i]),
                std::bit_cast<uint32_t>(fp16_bits_to_fp32(h[i].bits)))
          << simd_level_name(level) << " fp16 0x" << std::hex << h[i].bits;
      ASSERT_EQ(std::bit_cast<uint32_t>(fb[i]), static_cast<uint32_t>(b[i].bits) << 16)
          << simd_level_name(level);
    }
  }
}

TEST(ConvertTest, ShortLengthsUseTailsCorrectly) {
  for (SimdLevel level : available_levels()) {
    ScopedSimdLevel scoped(level);
    for (size_t n : {0, 1, 7, 8, 9, 15, 16, 17, 33}) {
      std::vector<float> src(n);
      for (size_t i = 0; i < n; ++i) src[i] = 0.1f * static_cast<float>(i) - 1.0f;
      std::vector<BFloat16> b(n);
      std::vector<Half> h(n);
      fp32_to_bf16(src, b);
      fp32_to_fp16(src, h);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(b[i], to_bfloat16(src[i])) << n << " " << i;
        ASSERT_EQ(h[i], to_half(src[i])) << n << " " << i;
      }
    }
  }
}

TEST(ConvertTest, GenericConvertCoversEveryPairAndRejectsLengthMismatch) {
  const std::vector<float> src = {1.0f, -2.5f, 3.14159f, 65504.0f, 1e-6f};
  AlignedBuffer<Half> h(src.size());
  AlignedBuffer<BFloat16> b(src.size());
  AlignedBuffer<float> f(src.size());
  ASSERT_TRUE(convert(make_view(std::span<const float>(src)), make_view(h.span())).ok());
  ASSERT_TRUE(convert(make_view(h.span()), make_view(b.span())).ok());  // fp16 -> bf16
  ASSERT_TRUE(convert(make_view(b.span()), make_view(f.span())).ok());
  for (size_t i = 0; i < src.size(); ++i) {
    EXPECT_EQ(b[i], to_bfloat16(to_float(to_half(src[i])))) << i;
    EXPECT_EQ(f[i], to_float(b[i])) << i;
  }
  AlignedBuffer<float> copy(src.size());
  ASSERT_TRUE(convert(make_view(f.span()), make_view(copy.span())).ok());
  EXPECT_EQ(copy[2], f[2]);

  AlignedBuffer<Half> short_dst(3);
  const Status s = convert(make_view(std::span<const float>(src)), make_view(short_dst.span()));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("fp32 -> fp16: source has 5 elements, destination 3"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace zerotrain::device::cpu
