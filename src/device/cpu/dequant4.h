// The CPU 4-bit dequantizer behind CpuOps::dequantize_4bit: per block a
// 16-entry table code[k]·scale, then the packed bytes decoded through it
// (AVX-512: one permute per 16 values; AVX2: two permutes and a blend per
// 8), OpenMP over blocks. Every path equals dequantize_4bit_reference bit
// for bit (the products are the same float32 multiplies).
//
//   cpu::dequantize_4bit(q.view(), 0, q.numel, out);
//
// Thread-safety: reentrant.
#pragma once

#include <cstdint>

#include "device/quant4.h"

namespace zerotrain::device::cpu {

void dequantize_4bit(const Quant4View& q, int64_t begin, int64_t end, float* out);

namespace dequant4_spans {
// Decodes `pairs` bytes into 2·pairs floats through lut[16].
using Dequant4SpanFn = void (*)(const uint8_t* bytes, const float* lut, int64_t pairs, float* out);
void dequant4_span_portable(const uint8_t* bytes, const float* lut, int64_t pairs, float* out);
#if defined(__x86_64__)
void dequant4_span_avx2(const uint8_t* bytes, const float* lut, int64_t pairs, float* out);
void dequant4_span_avx512(const uint8_t* bytes, const float* lut, int64_t pairs, float* out);
#endif
}  // namespace dequant4_spans

}  // namespace zerotrain::device::cpu
