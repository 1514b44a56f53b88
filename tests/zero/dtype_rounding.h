// The model of one rounding into a 16-bit wire or storage dtype, shared by
// the grad_wire and PartitionArray tests: x as fp32 after a round trip
// through `d` (round to nearest even; fp32 unchanged).
//
//   EXPECT_EQ(stored, testutil::rounded_through(DType::kBFloat16, x));
#pragma once

#include "core/dtype.h"
#include "core/half.h"

namespace zerotrain::zero::testutil {

inline float rounded_through(DType d, float x) {
  switch (d) {
    case DType::kBFloat16:
      return bf16_bits_to_fp32(fp32_to_bf16_bits(x));
    case DType::kFloat16:
      return fp16_bits_to_fp32(fp32_to_fp16_bits(x));
    case DType::kFloat32:
      break;
  }
  return x;
}

}  // namespace zerotrain::zero::testutil
