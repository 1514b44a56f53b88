// AVX2+F16C and AVX-512 bulk conversion kernels (see convert_kernels.h).
// Compiled with per-function target attributes, so the rest of the binary
// stays baseline x86-64. Tails use the portable scalar code: same bits.
#include "device/cpu/convert_kernels.h"

#if defined(__x86_64__)
#include "core/half.h"
#include "device/cpu/simd_x86.h"

namespace zerotrain::device::cpu::detail {

ZT_TARGET_AVX2 void fp32_to_fp16_avx2(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     simd::fp32_to_fp16_8(_mm256_loadu_ps(src + i)));
  }
  fp32_to_fp16_portable(src + i, dst + i, n - i);
}

ZT_TARGET_AVX2 void fp16_to_fp32_avx2(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  fp16_to_fp32_portable(src + i, dst + i, n - i);
}

ZT_TARGET_AVX2 void fp32_to_bf16_avx2(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     simd::fp32_to_bf16_8(_mm256_loadu_ps(src + i)));
  }
  fp32_to_bf16_portable(src + i, dst + i, n - i);
}

ZT_TARGET_AVX2 void bf16_to_fp32_avx2(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, simd::bf16_to_fp32_8(b));
  }
  bf16_to_fp32_portable(src + i, dst + i, n - i);
}

ZT_TARGET_AVX512 void fp32_to_fp16_avx512(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        simd::fp32_to_fp16_16(_mm512_loadu_ps(src + i)));
  }
  fp32_to_fp16_portable(src + i, dst + i, n - i);
}

ZT_TARGET_AVX512 void fp16_to_fp32_avx512(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(h));
  }
  fp16_to_fp32_portable(src + i, dst + i, n - i);
}

ZT_TARGET_AVX512 void fp32_to_bf16_avx512(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        simd::fp32_to_bf16_16(_mm512_loadu_ps(src + i)));
  }
  fp32_to_bf16_portable(src + i, dst + i, n - i);
}

ZT_TARGET_AVX512 void bf16_to_fp32_avx512(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm512_storeu_ps(dst + i, simd::bf16_to_fp32_16(b));
  }
  bf16_to_fp32_portable(src + i, dst + i, n - i);
}

}  // namespace zerotrain::device::cpu::detail

#endif  // __x86_64__
