// AVX2 and AVX-512 fused Adam kernels (see adam_kernels.h). Same float
// expression, same order as adam_portable, no FMA: bit-identical results.
// Tails (n % width) go through adam_portable.
#include "optim/adam_kernels.h"

#if defined(__x86_64__)
#include "tensor/simd_x86.h"

namespace zerotrain::optim::detail {
namespace {

AdamKernelPtrs advance(const AdamKernelPtrs& p, size_t i) {
  return {p.params + i, p.grads + i, p.exp_avg + i, p.exp_avg_sq + i,
          p.copy != nullptr ? p.copy + i : nullptr};
}

template <CopyKind kCopy>
ZT_TARGET_AVX512 size_t adam_avx512_body(const AdamKernelArgs& a, const AdamKernelPtrs& p,
                                         size_t n) {
  const __m512 b1 = _mm512_set1_ps(a.beta1), b2 = _mm512_set1_ps(a.beta2);
  const __m512 omb1 = _mm512_set1_ps(a.one_minus_beta1), omb2 = _mm512_set1_ps(a.one_minus_beta2);
  const __m512 eps = _mm512_set1_ps(a.eps), step = _mm512_set1_ps(a.step_size);
  const __m512 bc2 = _mm512_set1_ps(a.bc2_rsqrt), decay = _mm512_set1_ps(a.decay);
  const __m512 l2 = _mm512_set1_ps(a.l2);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 grad = _mm512_loadu_ps(p.grads + i);
    __m512 param = _mm512_loadu_ps(p.params + i);
    if (a.l2_mode) grad = _mm512_add_ps(_mm512_mul_ps(param, l2), grad);
    const __m512 m =
        _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(p.exp_avg + i), b1), _mm512_mul_ps(grad, omb1));
    const __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(p.exp_avg_sq + i), b2),
                                   _mm512_mul_ps(_mm512_mul_ps(grad, grad), omb2));
    const __m512 denom = _mm512_add_ps(_mm512_mul_ps(_mm512_sqrt_ps(v), bc2), eps);
    const __m512 update = _mm512_div_ps(m, denom);
    if (a.decoupled) param = _mm512_mul_ps(param, decay);
    param = _mm512_sub_ps(param, _mm512_mul_ps(step, update));
    _mm512_storeu_ps(p.exp_avg + i, m);
    _mm512_storeu_ps(p.exp_avg_sq + i, v);
    _mm512_storeu_ps(p.params + i, param);
    if constexpr (kCopy == CopyKind::kFp16) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p.copy + i),
                          tensor::simd::fp32_to_fp16_16(param));
    } else if constexpr (kCopy == CopyKind::kBf16) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p.copy + i),
                          tensor::simd::fp32_to_bf16_16(param));
    }
  }
  return i;
}

template <CopyKind kCopy>
ZT_TARGET_AVX2 size_t adam_avx2_body(const AdamKernelArgs& a, const AdamKernelPtrs& p, size_t n) {
  const __m256 b1 = _mm256_set1_ps(a.beta1), b2 = _mm256_set1_ps(a.beta2);
  const __m256 omb1 = _mm256_set1_ps(a.one_minus_beta1), omb2 = _mm256_set1_ps(a.one_minus_beta2);
  const __m256 eps = _mm256_set1_ps(a.eps), step = _mm256_set1_ps(a.step_size);
  const __m256 bc2 = _mm256_set1_ps(a.bc2_rsqrt), decay = _mm256_set1_ps(a.decay);
  const __m256 l2 = _mm256_set1_ps(a.l2);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 grad = _mm256_loadu_ps(p.grads + i);
    __m256 param = _mm256_loadu_ps(p.params + i);
    if (a.l2_mode) grad = _mm256_add_ps(_mm256_mul_ps(param, l2), grad);
    const __m256 m =
        _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(p.exp_avg + i), b1), _mm256_mul_ps(grad, omb1));
    const __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(p.exp_avg_sq + i), b2),
                                   _mm256_mul_ps(_mm256_mul_ps(grad, grad), omb2));
    const __m256 denom = _mm256_add_ps(_mm256_mul_ps(_mm256_sqrt_ps(v), bc2), eps);
    const __m256 update = _mm256_div_ps(m, denom);
    if (a.decoupled) param = _mm256_mul_ps(param, decay);
    param = _mm256_sub_ps(param, _mm256_mul_ps(step, update));
    _mm256_storeu_ps(p.exp_avg + i, m);
    _mm256_storeu_ps(p.exp_avg_sq + i, v);
    _mm256_storeu_ps(p.params + i, param);
    if constexpr (kCopy == CopyKind::kFp16) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p.copy + i), tensor::simd::fp32_to_fp16_8(param));
    } else if constexpr (kCopy == CopyKind::kBf16) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p.copy + i), tensor::simd::fp32_to_bf16_8(param));
    }
  }
  return i;
}

}  // namespace

void adam_avx512(const AdamKernelArgs& a, const AdamKernelPtrs& p, size_t n) {
  size_t done = 0;
  switch (a.copy_kind) {
    case CopyKind::kNone:
      done = adam_avx512_body<CopyKind::kNone>(a, p, n);
      break;
    case CopyKind::kFp16:
      done = adam_avx512_body<CopyKind::kFp16>(a, p, n);
      break;
    case CopyKind::kBf16:
      done = adam_avx512_body<CopyKind::kBf16>(a, p, n);
      break;
  }
  adam_portable(a, advance(p, done), n - done);
}

void adam_avx2(const AdamKernelArgs& a, const AdamKernelPtrs& p, size_t n) {
  size_t done = 0;
  switch (a.copy_kind) {
    case CopyKind::kNone:
      done = adam_avx2_body<CopyKind::kNone>(a, p, n);
      break;
    case CopyKind::kFp16:
      done = adam_avx2_body<CopyKind::kFp16>(a, p, n);
      break;
    case CopyKind::kBf16:
      done = adam_avx2_body<CopyKind::kBf16>(a, p, n);
      break;
  }
  adam_portable(a, advance(p, done), n - done);
}

}  // namespace zerotrain::optim::detail

#endif  // __x86_64__
