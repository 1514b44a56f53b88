// Reduction kernels for the comm layer (16-bit types widened to fp32).
#include "comm/reduce.h"

#include <cmath>
#include <cstring>

namespace zerotrain::comm {
namespace {

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

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void combine16(uint16_t* dst, const uint16_t* a, const uint16_t* b, size_t n, ReduceOp op,
               float div) {
  bool sum = op == ReduceOp::kSum || op == ReduceOp::kAvg;
  for (size_t i = 0; i < n; ++i) {
    float v = combine(Load(a[i]), Load(b[i]), op);
    dst[i] = Store(sum && div != 1.0f ? v / div : v);
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
      combine16<fp16_bits_to_fp32, fp32_to_fp16_bits>(static_cast<uint16_t*>(dst),
                                              static_cast<const uint16_t*>(a),
                                              static_cast<const uint16_t*>(b), count, op, div);
      return;
    case DType::kBFloat16:
      combine16<bf16_bits_to_fp32, fp32_to_bf16_bits>(static_cast<uint16_t*>(dst),
                                              static_cast<const uint16_t*>(a),
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
