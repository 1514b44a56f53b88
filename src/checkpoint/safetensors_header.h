// Internal to zt_checkpoint: the safetensors JSON header, formatted for the
// writer and parsed and validated for the reader (see safetensors.h for the
// layout).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/safetensors.h"

namespace zerotrain::checkpoint {

// Hugging Face's reader refuses larger headers; so do we, before allocating.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// Bytes of a tensor of `shape` and `dtype`; nullopt for a negative
// dimension or a size that overflows int64.
std::optional<int64_t> byte_size(const std::vector<int64_t>& shape, DType dtype);

// "[2, 3]" ("[]" for a scalar).
std::string shape_string(const std::vector<int64_t>& shape);

// The JSON header for `tensors` (offsets already set), "__metadata__" first
// when not empty, padded with spaces to a multiple of 8 bytes.
// InvalidArgument if a name or metadata string is not valid UTF-8.
StatusOr<std::string> format_header(const std::vector<SafetensorsTensor>& tensors,
                                    const std::map<std::string, std::string>& metadata);

// Parses `text` and checks the tensors tile a data buffer of `data_size`
// bytes exactly; `tensors` come back in data order. Corruption or
// InvalidArgument (unsupported dtype) without the path (the caller adds it).
Status parse_header(std::string_view text, int64_t data_size,
                    std::vector<SafetensorsTensor>* tensors,
                    std::map<std::string, std::string>* metadata);

}  // namespace zerotrain::checkpoint
