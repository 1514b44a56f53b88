// Reduction kernels for the comm layer (16-bit types widened to fp32).
#include "comm/gloo/reduce.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "device/cpu/convert.h"

namespace zerotrain::comm {
namespace {

using zerotrain::BFloat16;
using zerotrain::Half;

// Combines one element in fp32; NaN wins for max/min so overflow flags
// reduced with kMax are never lost.
inline float combine(float a, float b, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return a + b;
    case ReduceOp::kMax:
      return (std::isnan(a) || a >= b) ? a : b;
    case ReduceOp::kMin:
      return (std::isnan(a) || a <= b) ? a : b;
  }
  return a;
}

// 16-bit elements a block at a time: widened with tensor's SIMD
// conversions, combined in fp32 (vectorised), rounded back to nearest
// even. The same values as element by element, several times faster.
void combine16(DType dtype, uint16_t* dst, const uint16_t* a, const uint16_t* b, size_t n,
               ReduceOp op, float div) {
  constexpr size_t kBlock = 1024;
  alignas(64) float x[kBlock], y[kBlock];
  const bool half = dtype == DType::kFloat16;
  const bool sum = op == ReduceOp::kSum || op == ReduceOp::kAvg;
  for (size_t i0 = 0; i0 < n; i0 += kBlock) {
    const size_t len = std::min(kBlock, n - i0);
    if (half) {
      device::cpu::fp16_to_fp32({reinterpret_cast<const Half*>(a + i0), len}, {x, len});
      device::cpu::fp16_to_fp32({reinterpret_cast<const Half*>(b + i0), len}, {y, len});
    } else {
      device::cpu::bf16_to_fp32({reinterpret_cast<const BFloat16*>(a + i0), len}, {x, len});
      device::cpu::bf16_to_fp32({reinterpret_cast<const BFloat16*>(b + i0), len}, {y, len});
    }
    if (sum && div != 1.0f) {
      for (size_t i = 0; i < len; ++i) x[i] = (x[i] + y[i]) / div;
    } else if (sum) {
      for (size_t i = 0; i < len; ++i) x[i] = x[i] + y[i];
    } else {
      for (size_t i = 0; i < len; ++i) x[i] = combine(x[i], y[i], op);
    }
    if (half)
      device::cpu::fp32_to_fp16({x, len}, {reinterpret_cast<Half*>(dst + i0), len});
    else
      device::cpu::fp32_to_bf16({x, len}, {reinterpret_cast<BFloat16*>(dst + i0), len});
  }
}

void combine32(float* dst, const float* a, const float* b, size_t n, ReduceOp op, float div) {
  if (op == ReduceOp::kSum || op == ReduceOp::kAvg) {
    // Separate loops so the common case vectorises cleanly.
    if (div == 1.0f) {
      for (size_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
    } else {
      for (size_t i = 0; i < n; ++i) dst[i] = (a[i] + b[i]) / div;
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) dst[i] = combine(a[i], b[i], op);
}

}  // namespace

void reduce_combine(void* dst, const void* a, const void* b, size_t count, DType dtype, ReduceOp op,
                    int divisor) {
  float div = static_cast<float>(divisor);
  switch (dtype) {
    case DType::kFloat32:
      combine32(static_cast<float*>(dst), static_cast<const float*>(a),
                static_cast<const float*>(b), count, op, div);
      return;
    case DType::kFloat16:
    case DType::kBFloat16:
      combine16(dtype, static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),
                static_cast<const uint16_t*>(b), count, op, div);
      return;
  }
}

void divide_inplace(void* data, size_t count, DType dtype, int divisor) {
  if (divisor == 1) return;
  float div = static_cast<float>(divisor);
  if (dtype == DType::kFloat32) {
    float* p = static_cast<float*>(data);
    for (size_t i = 0; i < count; ++i) p[i] /= div;
    return;
  }
  uint16_t* p = static_cast<uint16_t*>(data);
  bool half = dtype == DType::kFloat16;
  for (size_t i = 0; i < count; ++i) {
    float v = (half ? fp16_bits_to_fp32(p[i]) : bf16_bits_to_fp32(p[i])) / div;
    p[i] = half ? fp32_to_fp16_bits(v) : fp32_to_bf16_bits(v);
  }
}

}  // namespace zerotrain::comm
