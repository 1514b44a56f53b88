// AVX2 and AVX-512 fused Adam kernels (see adam_kernels.h). Same float
// expression, same order as adam_portable, no FMA: bit-identical results.
// One instantiation per (grad dtype, copy dtype); tails (n % width) go
// through adam_portable.
#include "device/cpu/adam_kernels.h"

#if defined(__x86_64__)
#include "device/cpu/simd_x86.h"

namespace zerotrain::device::cpu::detail {
namespace {

using Body = size_t (*)(const AdamKernelArgs&, const AdamKernelPtrs&, size_t);

template <GradKind kGrad>
ZT_TARGET_AVX512 __m512 load_grad16(const void* grads, size_t i) {
  if constexpr (kGrad == GradKind::kFp32) {
    return _mm512_loadu_ps(static_cast<const float*>(grads) + i);
  } else {
    const __m256i bits = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(grads) + i));
    if constexpr (kGrad == GradKind::kFp16) return _mm512_cvtph_ps(bits);
    return device::cpu::simd::bf16_to_fp32_16(bits);
  }
}

template <GradKind kGrad>
ZT_TARGET_AVX2 __m256 load_grad8(const void* grads, size_t i) {
  if constexpr (kGrad == GradKind::kFp32) {
    return _mm256_loadu_ps(static_cast<const float*>(grads) + i);
  } else {
    const __m128i bits =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(grads) + i));
    if constexpr (kGrad == GradKind::kFp16) return _mm256_cvtph_ps(bits);
    return device::cpu::simd::bf16_to_fp32_8(bits);
  }
}

template <GradKind kGrad, CopyKind kCopy>
ZT_TARGET_AVX512 size_t avx512_body(const AdamKernelArgs& a, const AdamKernelPtrs& p, size_t n) {
  const __m512 b1 = _mm512_set1_ps(a.beta1), b2 = _mm512_set1_ps(a.beta2);
  const __m512 omb1 = _mm512_set1_ps(a.one_minus_beta1), omb2 = _mm512_set1_ps(a.one_minus_beta2);
  const __m512 eps = _mm512_set1_ps(a.eps), step = _mm512_set1_ps(a.step_size);
  const __m512 bc2 = _mm512_set1_ps(a.bc2_rsqrt), decay = _mm512_set1_ps(a.decay);
  const __m512 l2 = _mm512_set1_ps(a.l2), gscale = _mm512_set1_ps(a.grad_scale);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 grad = load_grad16<kGrad>(p.grads, i);
    if (a.scale_grads) grad = _mm512_mul_ps(grad, gscale);
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
    auto* copy = reinterpret_cast<__m256i*>(p.copy + i);
    if constexpr (kCopy == CopyKind::kFp16)
      _mm256_storeu_si256(copy, device::cpu::simd::fp32_to_fp16_16(param));
    if constexpr (kCopy == CopyKind::kBf16)
      _mm256_storeu_si256(copy, device::cpu::simd::fp32_to_bf16_16(param));
  }
  return i;
}

template <GradKind kGrad, CopyKind kCopy>
ZT_TARGET_AVX2 size_t avx2_body(const AdamKernelArgs& a, const AdamKernelPtrs& p, size_t n) {
  const __m256 b1 = _mm256_set1_ps(a.beta1), b2 = _mm256_set1_ps(a.beta2);
  const __m256 omb1 = _mm256_set1_ps(a.one_minus_beta1), omb2 = _mm256_set1_ps(a.one_minus_beta2);
  const __m256 eps = _mm256_set1_ps(a.eps), step = _mm256_set1_ps(a.step_size);
  const __m256 bc2 = _mm256_set1_ps(a.bc2_rsqrt), decay = _mm256_set1_ps(a.decay);
  const __m256 l2 = _mm256_set1_ps(a.l2), gscale = _mm256_set1_ps(a.grad_scale);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 grad = load_grad8<kGrad>(p.grads, i);
    if (a.scale_grads) grad = _mm256_mul_ps(grad, gscale);
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
    auto* copy = reinterpret_cast<__m128i*>(p.copy + i);
    if constexpr (kCopy == CopyKind::kFp16)
      _mm_storeu_si128(copy, device::cpu::simd::fp32_to_fp16_8(param));
    if constexpr (kCopy == CopyKind::kBf16)
      _mm_storeu_si128(copy, device::cpu::simd::fp32_to_bf16_8(param));
  }
  return i;
}

// [grad kind][copy kind] -> instantiation.
template <template <GradKind, CopyKind> class Pick>
constexpr Body kTable[3][3] = {
    {Pick<GradKind::kFp32, CopyKind::kNone>::fn, Pick<GradKind::kFp32, CopyKind::kFp16>::fn,
     Pick<GradKind::kFp32, CopyKind::kBf16>::fn},
    {Pick<GradKind::kFp16, CopyKind::kNone>::fn, Pick<GradKind::kFp16, CopyKind::kFp16>::fn,
     Pick<GradKind::kFp16, CopyKind::kBf16>::fn},
    {Pick<GradKind::kBf16, CopyKind::kNone>::fn, Pick<GradKind::kBf16, CopyKind::kFp16>::fn,
     Pick<GradKind::kBf16, CopyKind::kBf16>::fn},
};

template <GradKind g, CopyKind c>
struct PickAvx512 {
  static constexpr Body fn = avx512_body<g, c>;
};
template <GradKind g, CopyKind c>
struct PickAvx2 {
  static constexpr Body fn = avx2_body<g, c>;
};

void run(Body body, const AdamKernelArgs& a, const AdamKernelPtrs& p, size_t n) {
  const size_t done = body(a, p, n);
  adam_portable(a, advance(a, p, done), n - done);
}

}  // namespace

void adam_avx512(const AdamKernelArgs& a, const AdamKernelPtrs& p, size_t n) {
  run(kTable<PickAvx512>[static_cast<int>(a.grad_kind)][static_cast<int>(a.copy_kind)], a, p, n);
}

void adam_avx2(const AdamKernelArgs& a, const AdamKernelPtrs& p, size_t n) {
  run(kTable<PickAvx2>[static_cast<int>(a.grad_kind)][static_cast<int>(a.copy_kind)], a, p, n);
}

}  // namespace zerotrain::device::cpu::detail

#endif  // __x86_64__
