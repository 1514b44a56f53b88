// AVX2 and AVX-512 overflow checks and double-precision sums of squares.
#include "device/cpu/reduce_kernels.h"

#if defined(__x86_64__)
#include "device/cpu/simd_x86.h"

namespace zerotrain::device::cpu::detail {

ZT_TARGET_AVX512 bool any_nonfinite_avx512(const float* x, size_t n) {
  const __m512i exp_mask = _mm512_set1_epi32(0x7f800000);
  __mmask16 hit = 0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i bits = _mm512_and_si512(_mm512_loadu_si512(x + i), exp_mask);
    hit |= _mm512_cmpeq_epi32_mask(bits, exp_mask);
  }
  return hit != 0 || any_nonfinite_portable(x + i, n - i);
}

ZT_TARGET_AVX512 double sum_squares_avx512(const float* x, size_t n) {
  __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1));
    acc0 = _mm512_fmadd_pd(lo, lo, acc0);
    acc1 = _mm512_fmadd_pd(hi, hi, acc1);
  }
  return _mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1)) + sum_squares_portable(x + i, n - i);
}

ZT_TARGET_AVX2 bool any_nonfinite_avx2(const float* x, size_t n) {
  const __m256i exp_mask = _mm256_set1_epi32(0x7f800000);
  __m256i hit = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i bits =
        _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), exp_mask);
    hit = _mm256_or_si256(hit, _mm256_cmpeq_epi32(bits, exp_mask));
  }
  return !_mm256_testz_si256(hit, hit) || any_nonfinite_portable(x + i, n - i);
}

ZT_TARGET_AVX2 double sum_squares_avx2(const float* x, size_t n) {
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256d lo = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
    const __m256d hi = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
    acc0 = _mm256_fmadd_pd(lo, lo, acc0);
    acc1 = _mm256_fmadd_pd(hi, hi, acc1);
  }
  const __m256d sum = _mm256_add_pd(acc0, acc1);
  const __m128d pair = _mm_add_pd(_mm256_castpd256_pd128(sum), _mm256_extractf128_pd(sum, 1));
  const double total = _mm_cvtsd_f64(_mm_add_sd(pair, _mm_unpackhi_pd(pair, pair)));
  return total + sum_squares_portable(x + i, n - i);
}

}  // namespace zerotrain::device::cpu::detail

#endif  // __x86_64__
