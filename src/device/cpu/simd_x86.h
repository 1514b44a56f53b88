// Internal: x86 SIMD helpers shared by the tensor and optim kernels
// (fp32 <-> bf16/fp16 in registers, matching half.h bit for bit). Include
// only from kernel .cc files; every function carries its target attribute,
// so the file needs no -m flags and callers must hold the same target.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#define ZT_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define ZT_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")))

namespace zerotrain::device::cpu::simd {

// 8 floats -> 8 fp16 (round-to-nearest-even; F16C quiets NaN as half.h does).
ZT_TARGET_AVX2 inline __m128i fp32_to_fp16_8(__m256 v) {
  return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// 8 floats -> 8 bf16 in the low 16 bits of each 32-bit lane.
ZT_TARGET_AVX2 inline __m256i fp32_to_bf16_lanes_8(__m256 v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i bias = _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, bias), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
  const __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  return _mm256_blendv_epi8(rounded, quiet, is_nan);
}

// 8 floats -> 8 packed bf16.
ZT_TARGET_AVX2 inline __m128i fp32_to_bf16_8(__m256 v) {
  const __m256i lanes = fp32_to_bf16_lanes_8(v);
  // Values fit in 16 bits, so unsigned-saturating packs are exact.
  const __m128i lo = _mm256_castsi256_si128(lanes);
  const __m128i hi = _mm256_extracti128_si256(lanes, 1);
  return _mm_packus_epi32(lo, hi);
}

ZT_TARGET_AVX2 inline __m256 bf16_to_fp32_8(__m128i b) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
}

ZT_TARGET_AVX512 inline __m256i fp32_to_fp16_16(__m512 v) {
  return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

ZT_TARGET_AVX512 inline __m256i fp32_to_bf16_16(__m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  const __m512i bias = _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(x, bias), 16);
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
  const __mmask16 is_nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(is_nan, rounded, quiet));
}

ZT_TARGET_AVX512 inline __m512 bf16_to_fp32_16(__m256i b) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
}

}  // namespace zerotrain::device::cpu::simd

#endif  // __x86_64__
