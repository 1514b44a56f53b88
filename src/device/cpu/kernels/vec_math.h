// Internal to kernels/cpu: a vectorisable expf and tanhf (the compiler can
// turn loops over them into SIMD, which it cannot do with libm calls),
// ZT_SIMD_CLONES to compile a hot leaf function for AVX-512, AVX2 and
// baseline x86-64 with run-time dispatch (the library itself is built for
// the baseline), and an OpenMP helper that hands each thread one chunk.
//
//   ZT_SIMD_CLONES void row(float* y, const float* x, int64_t n) {
//     for (int64_t i = 0; i < n; ++i) y[i] = fast_exp(x[i]);
//   }
//   parallel_chunks(N, [&](int64_t i0, int64_t i1) { row(y + i0, x + i0, i1 - i0); });
//
// Thread-safety: pure functions.
#pragma once

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__)
#define ZT_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ZT_SIMD_CLONES
#endif

namespace zerotrain::device::cpu {

// exp(x) with about 1 ulp error (Cephes expf: Cody-Waite reduction by
// ln 2, degree-6 polynomial, exponent assembled by bits). 0 below
// -87.33 (where expf goes subnormal), +inf-free: capped at exp(88.0);
// NaN in gives NaN out.
inline float fast_exp(float x) {
  const bool underflow = x < -87.33f;
  x = x > 88.0f ? 88.0f : x;
  x = x < -87.0f ? -87.0f : x;
  // Round x·log2(e) to the nearest integer with the 1.5·2^23 trick.
  const float shifted = x * 1.44269504088896341f + 12582912.0f;
  const float n = shifted - 12582912.0f;
  const int32_t ni = std::bit_cast<int32_t>(shifted) - 0x4b400000;
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  const float scale = std::bit_cast<float>((ni + 127) << 23);
  return underflow ? 0.0f : y * scale;
}

// tanh(x) = 1 - 2 / (exp(2x) + 1); absolute error about 1e-7, which is
// what GELU's 1 + tanh needs (it is never used where tanh(x) ≈ x matters
// relatively).
inline float fast_tanh(float x) { return 1.0f - 2.0f / (fast_exp(2.0f * x) + 1.0f); }

// Calls fn(begin, end) once per OpenMP thread with contiguous chunks of
// [0, n) (multiples of 16 elements, so SIMD bodies see aligned-ish runs).
template <typename Fn>
void parallel_chunks(int64_t n, Fn&& fn) {
#pragma omp parallel
  {
    const int64_t nth = omp_get_num_threads(), tid = omp_get_thread_num();
    const int64_t chunk = ((n + nth - 1) / nth + 15) / 16 * 16;
    const int64_t i0 = std::min(n, tid * chunk), i1 = std::min(n, i0 + chunk);
    if (i0 < i1) fn(i0, i1);
  }
}

}  // namespace zerotrain::device::cpu
