// DType: the element types zerotrain stores (fp32 master weights and states,
// fp16/bf16 model copies and gradients), with their size and name.
//
//   size_t bytes = dtype_size(DType::kBFloat16) * numel;   // 2 * numel
//   log::info("dtype ", dtype_name(d));                     // "bf16"
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

#include "core/status.h"

namespace zerotrain {

enum class DType { kFloat32, kFloat16, kBFloat16 };

// Bytes per element: 4, 2, 2.
constexpr size_t dtype_size(DType dtype) { return dtype == DType::kFloat32 ? 4 : 2; }

// "fp32", "fp16", "bf16".
std::string_view dtype_name(DType dtype);

// Accepts the names above and the torch spellings ("float32", "float16",
// "half", "bfloat16"); anything else is InvalidArgument naming the text.
StatusOr<DType> parse_dtype(std::string_view name);

}  // namespace zerotrain
