// The model of one rounding into a 16-bit wire or storage dtype, shared by
// the grad_wire and PartitionArray tests: x as fp32 after a round trip
// through `d` (round to nearest even; fp32 unchanged).
//
//   EXPECT_EQ(stored, testutil::rounded_through(tensor::DType::kBFloat16, x));
#pragma once

#include "tensor/dtype.h"
#include "tensor/half.h"

namespace zerotrain::zero::testutil {

inline float rounded_through(tensor::DType d, float x) {
  switch (d) {
    case tensor::DType::kBFloat16:
      return tensor::bf16_bits_to_fp32(tensor::fp32_to_bf16_bits(x));
    case tensor::DType::kFloat16:
      return tensor::fp16_bits_to_fp32(tensor::fp32_to_fp16_bits(x));
    case tensor::DType::kFloat32:
      break;
  }
  return x;
}

}  // namespace zerotrain::zero::testutil
