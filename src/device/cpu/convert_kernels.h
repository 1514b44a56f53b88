// Internal: per-ISA bulk conversion kernels behind convert.h. Not a public
// header; only convert.cc (and tests that pin a path) call these. The
// *_avx2 / *_avx512 functions must only run where detected_simd_level()
// allows them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace zerotrain::device::cpu::detail {

using ToHalfFn = void (*)(const float* src, uint16_t* dst, size_t n);
using FromHalfFn = void (*)(const uint16_t* src, float* dst, size_t n);

void fp32_to_fp16_portable(const float* src, uint16_t* dst, size_t n);
void fp16_to_fp32_portable(const uint16_t* src, float* dst, size_t n);
void fp32_to_bf16_portable(const float* src, uint16_t* dst, size_t n);
void bf16_to_fp32_portable(const uint16_t* src, float* dst, size_t n);

#if defined(__x86_64__)
void fp32_to_fp16_avx2(const float* src, uint16_t* dst, size_t n);
void fp16_to_fp32_avx2(const uint16_t* src, float* dst, size_t n);
void fp32_to_bf16_avx2(const float* src, uint16_t* dst, size_t n);
void bf16_to_fp32_avx2(const uint16_t* src, float* dst, size_t n);
void fp32_to_fp16_avx512(const float* src, uint16_t* dst, size_t n);
void fp16_to_fp32_avx512(const uint16_t* src, float* dst, size_t n);
void fp32_to_bf16_avx512(const float* src, uint16_t* dst, size_t n);
void bf16_to_fp32_avx512(const uint16_t* src, float* dst, size_t n);
#endif

}  // namespace zerotrain::device::cpu::detail
