// Every one of the 2^32 fp32 bit patterns: each SIMD level's fp16 and bf16
// conversions give the same bits as the portable code (whose rounding the
// unit tests check against a double-precision reference on every rounding
// boundary). Labelled slow: about 15 s of one core.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <vector>

#include "device/cpu/convert_kernels.h"
#include "device/cpu/cpu_features.h"

namespace zerotrain::device::cpu {
namespace {

#if defined(__x86_64__)
constexpr uint64_t kBlock = uint64_t{1} << 20;

using Convert = void (*)(const float*, uint16_t*, size_t);

struct Path {
  const char* name;
  Convert fn;
  const std::vector<uint16_t>* want;
};

TEST(ExhaustiveTest, SimdMatchesPortableOnAllFloats) {
  std::vector<float> src(kBlock);
  std::vector<uint16_t> want16(kBlock), wantb(kBlock), got(kBlock);
  std::vector<Path> paths;
  if (detected_simd_level() >= SimdLevel::kAvx512) {
    paths.push_back({"avx512 fp16", detail::fp32_to_fp16_avx512, &want16});
    paths.push_back({"avx512 bf16", detail::fp32_to_bf16_avx512, &wantb});
  }
  if (detected_simd_level() >= SimdLevel::kAvx2) {
    paths.push_back({"avx2 fp16", detail::fp32_to_fp16_avx2, &want16});
    paths.push_back({"avx2 bf16", detail::fp32_to_bf16_avx2, &wantb});
  }
  if (paths.empty()) GTEST_SKIP() << "no SIMD level on this CPU";
  for (uint64_t base = 0; base < (uint64_t{1} << 32); base += kBlock) {
    for (uint64_t i = 0; i < kBlock; ++i) {
      src[i] = std::bit_cast<float>(static_cast<uint32_t>(base + i));
    }
    detail::fp32_to_fp16_portable(src.data(), want16.data(), kBlock);
    detail::fp32_to_bf16_portable(src.data(), wantb.data(), kBlock);
    for (const Path& p : paths) {
      p.fn(src.data(), got.data(), kBlock);
      if (got == *p.want) continue;
      for (uint64_t i = 0; i < kBlock; ++i) {
        ASSERT_EQ(got[i], (*p.want)[i]) << p.name << " of 0x" << std::hex << (base + i);
      }
    }
  }
}
#endif

}  // namespace
}  // namespace zerotrain::device::cpu
