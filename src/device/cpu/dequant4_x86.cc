// AVX2 and AVX-512 spans of the 4-bit dequantizer (see dequant4.h):
// nibbles widened to 32-bit indices in element order (high nibble first),
// looked up in the block's 16-float table with permutes. Tails use the
// portable code: same bits.
#include "device/cpu/dequant4.h"

#if defined(__x86_64__)
#include "device/cpu/simd_x86.h"

namespace zerotrain::device::cpu::dequant4_spans {
namespace {

// 8 bytes -> 16 nibble indices in element order: hi0 lo0 hi1 lo1 ...
ZT_TARGET_AVX2 inline __m128i nibbles_16(const uint8_t* bytes) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes));
  const __m128i mask = _mm_set1_epi8(15);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), mask);
  const __m128i lo = _mm_and_si128(b, mask);
  return _mm_unpacklo_epi8(hi, lo);
}

}  // namespace

ZT_TARGET_AVX2 void dequant4_span_avx2(const uint8_t* bytes, const float* lut, int64_t pairs,
                                       float* out) {
  const __m256 lut_lo = _mm256_loadu_ps(lut), lut_hi = _mm256_loadu_ps(lut + 8);
  int64_t j = 0;
  for (; j + 8 <= pairs; j += 8) {
    const __m128i idx = nibbles_16(bytes + j);
    for (int half = 0; half < 2; ++half) {
      const __m256i i32 = _mm256_cvtepu8_epi32(half == 0 ? idx : _mm_srli_si128(idx, 8));
      // Index bit 3 picks the upper table half: moved into the sign bit for blendv.
      const __m256 pick = _mm256_castsi256_ps(_mm256_slli_epi32(i32, 28));
      const __m256 v = _mm256_blendv_ps(_mm256_permutevar8x32_ps(lut_lo, i32),
                                        _mm256_permutevar8x32_ps(lut_hi, i32), pick);
      _mm256_storeu_ps(out + 2 * j + 8 * half, v);
    }
  }
  dequant4_span_portable(bytes + j, lut, pairs - j, out + 2 * j);
}

ZT_TARGET_AVX512 void dequant4_span_avx512(const uint8_t* bytes, const float* lut, int64_t pairs,
                                           float* out) {
  const __m512 table = _mm512_loadu_ps(lut);
  int64_t j = 0;
  for (; j + 8 <= pairs; j += 8) {
    const __m512i idx = _mm512_cvtepu8_epi32(nibbles_16(bytes + j));
    _mm512_storeu_ps(out + 2 * j, _mm512_permutexvar_ps(idx, table));
  }
  dequant4_span_portable(bytes + j, lut, pairs - j, out + 2 * j);
}

}  // namespace zerotrain::device::cpu::dequant4_spans
#endif
