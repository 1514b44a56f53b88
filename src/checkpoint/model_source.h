// Where an inference command (generate, eval) gets a model and its weights:
//  - a zerotrain checkpoint: a tag directory (global_step30/), or the
//    checkpoint directory whose `latest` names one; read through the
//    re-partitioning reader, so a checkpoint of any stage and world size
//    loads whole into one process, tensor range by tensor range;
//  - a Hugging Face model directory (config.json and safetensors), or a
//    preset / config.json without weights (for what needs none);
//  - a safetensors file: HF weights with a config.json beside it, or the
//    single-file GPT-2 export, whose metadata holds its config.
//
//   ZT_ASSIGN_OR_RETURN(ModelSource src, open_model_source("ckpt"));
//   ZT_ASSIGN_OR_RETURN(auto m, model::create_module(src.spec, options));
//   ZT_RETURN_IF_ERROR(m->load_parameters(src.read));
//
// Thread-safety: `read` is not safe to call concurrently.
#pragma once

#include <string>

#include "core/status.h"
#include "model/param_layout.h"
#include "model/registry.h"

namespace zerotrain::checkpoint {

struct ModelSource {
  model::ModelSpec spec;
  model::ReadFlatFn read;   // empty without weights (a preset or bare config)
  std::string description;  // "checkpoint ckpt/global_step30", "HF model DIR", ...
};

// NotFound when `path` is none of those; the readers' errors (naming the
// file) otherwise.
StatusOr<ModelSource> open_model_source(const std::string& path);

}  // namespace zerotrain::checkpoint
