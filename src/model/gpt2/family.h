// The GPT-2 family's registry entry (model/registry.h): presets gpt2-tiny,
// gpt2-5m, gpt2-small-ish and gpt2, and the factory over GptModel.
//
//   const ModelFamily& f = gpt2::family();
//
// Thread-safety: immutable.
#pragma once

#include "model/registry.h"

namespace zerotrain::model::gpt2 {

const ModelFamily& family();

}  // namespace zerotrain::model::gpt2
