// The Llama family's registry entries (model/registry.h), one per HF
// model_type it reads — llama (presets llama-tiny, smollm-135m,
// tinyllama-1.1b, llama-3.2-1b), mistral (mistral-tiny), qwen2
// (qwen2-tiny) — all built by LlamaModel.
//
//   const ModelFamily& f = llama::family("qwen2");
//
// Thread-safety: immutable.
#pragma once

#include <string_view>

#include "model/registry.h"

namespace zerotrain::model::llama {

// model_type is "llama", "mistral" or "qwen2" (checked).
const ModelFamily& family(std::string_view model_type);

}  // namespace zerotrain::model::llama
