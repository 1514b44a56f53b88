// The argument checks every device's Ops share, so a bad call fails the
// same way, in the same words, on the CPU and on a GPU.
//
//   ZT_RETURN_IF_ERROR(check_same_numel("convert", src, dst));
//   ZT_RETURN_IF_ERROR(check_fp32("scale", x));
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "core/status.h"
#include "core/tensor.h"

namespace zerotrain::device {

// InvalidArgument "<op>: <a> elements vs <b>" unless a and b have as many.
inline Status check_same_numel(const char* op, const ConstTensor& a, const ConstTensor& b) {
  if (a.numel == b.numel) return ok_status();
  return invalid_argument(std::string(op) + ": " + std::to_string(a.numel) + " elements vs " +
                          std::to_string(b.numel));
}

// InvalidArgument "<op>: needs fp32, got <dtype>" unless t is fp32.
inline Status check_fp32(const char* op, const ConstTensor& t) {
  if (t.dtype == DType::kFloat32) return ok_status();
  return invalid_argument(std::string(op) + ": needs fp32, got " +
                          std::string(dtype_name(t.dtype)));
}

}  // namespace zerotrain::device
