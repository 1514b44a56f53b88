// Typed reads of tokenizer.json fields that name the JSON path on failure
// ("normalizer.normalizers[1].content: expected a string"). Internal to
// src/text/.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace zerotrain::text::json_fields {

using Json = nlohmann::json;

inline Status wrong_type(const std::string& where, const char* expected) {
  return invalid_argument(where + ": expected " + expected);
}

inline StatusOr<std::string> string_at(const Json& j, const char* key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return wrong_type(where + "." + key, "a string");
  return it->get<std::string>();
}

// `fallback` when the key is absent or null (HF writes null for defaults).
inline StatusOr<bool> bool_or(const Json& j, const char* key, bool fallback,
                              const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return wrong_type(where + "." + key, "true or false");
  return it->get<bool>();
}

inline StatusOr<std::string> type_of(const Json& j, const std::string& where) {
  if (!j.is_object()) return wrong_type(where, "an object");
  return string_at(j, "type", where);
}

inline Status unsupported(const std::string& where, const std::string& type,
                          const char* supported) {
  return invalid_argument(where + ": type \"" + type +
                          "\" is not supported (supported: " + supported + ")");
}

}  // namespace zerotrain::text::json_fields
