// Model presets for the decoder and generation tests, with sliding windows
// shorter than their sequences: "<preset>+window" is the preset with a
// window of 9 positions (Qwen2's on the layers from 1 on).
#pragma once

#include <cctype>
#include <string>

#include "model/registry.h"

namespace zerotrain::model::testing {

inline StatusOr<ModelSpec> preset_spec(const std::string& name) {
  const size_t plus = name.find("+window");
  if (plus == std::string::npos) return model_spec(name);
  ZT_ASSIGN_OR_RETURN(ModelSpec spec, model_spec(name.substr(0, plus)));
  spec.config["sliding_window"] = 9;
  if (spec.config["model_type"] == "qwen2") {
    spec.config["use_sliding_window"] = true;
    spec.config["max_window_layers"] = 1;
  }
  return spec;
}

// A gtest parameter name for a preset ("mistral-tiny+window" ->
// "mistral_tiny_window").
inline std::string param_name(std::string preset) {
  for (char& c : preset)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return preset;
}

}  // namespace zerotrain::model::testing
