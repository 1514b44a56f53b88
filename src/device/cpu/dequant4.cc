// CPU 4-bit dequantization: block loop and SIMD dispatch (see dequant4.h).
#include "device/cpu/dequant4.h"

#include <algorithm>

#include "device/cpu/cpu_features.h"

namespace zerotrain::device::cpu {
namespace dequant4_spans {

void dequant4_span_portable(const uint8_t* bytes, const float* lut, int64_t pairs, float* out) {
  for (int64_t j = 0; j < pairs; ++j) {
    out[2 * j] = lut[bytes[j] >> 4];
    out[2 * j + 1] = lut[bytes[j] & 15];
  }
}

}  // namespace dequant4_spans

namespace {

dequant4_spans::Dequant4SpanFn span_kernel() {
#if defined(__x86_64__)
  switch (active_simd_level()) {
    case SimdLevel::kAvx512: return dequant4_spans::dequant4_span_avx512;
    case SimdLevel::kAvx2: return dequant4_spans::dequant4_span_avx2;
    case SimdLevel::kPortable: break;
  }
#endif
  return dequant4_spans::dequant4_span_portable;
}

float decode_one(const Quant4View& q, const float* lut, int64_t i) {
  return lut[quant4_nibble(q.packed, i)];
}

}  // namespace

void dequantize_4bit(const Quant4View& q, int64_t begin, int64_t end, float* out) {
  if (begin >= end) return;
  const dequant4_spans::Dequant4SpanFn span = span_kernel();
  const int64_t first = begin / q.blocksize, last = (end - 1) / q.blocksize;
#pragma omp parallel for schedule(static) if (last - first >= 64)
  for (int64_t b = first; b <= last; ++b) {
    float lut[16];
    const float s = quant4_block_scale(q, b);
    for (int k = 0; k < 16; ++k) lut[k] = q.code[k] * s;
    int64_t i = std::max(begin, b * q.blocksize);
    const int64_t hi = std::min(end, (b + 1) * q.blocksize);
    if (i % 2 != 0 && i < hi) out[i - begin] = decode_one(q, lut, i), ++i;
    const int64_t pairs = (hi - i) / 2;
    span(q.packed + i / 2, lut, pairs, out + (i - begin));
    i += 2 * pairs;
    if (i < hi) out[i - begin] = decode_one(q, lut, i);
  }
}

}  // namespace zerotrain::device::cpu
