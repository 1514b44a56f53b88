// DType names and parsing.
#include "core/dtype.h"

#include <string>

namespace zerotrain {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "fp32";
    case DType::kFloat16:
      return "fp16";
    case DType::kBFloat16:
      return "bf16";
  }
  return "unknown";
}

StatusOr<DType> parse_dtype(std::string_view name) {
  if (name == "fp32" || name == "float32" || name == "float") return DType::kFloat32;
  if (name == "fp16" || name == "float16" || name == "half") return DType::kFloat16;
  if (name == "bf16" || name == "bfloat16") return DType::kBFloat16;
  return invalid_argument("unknown dtype \"" + std::string(name) +
                          "\" (expected fp32, fp16 or bf16)");
}

}  // namespace zerotrain
