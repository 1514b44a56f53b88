// The model registry: every family the build has (family name → factory,
// layout, facts, presets), so the trainer, checkpoints and tools build a
// model from a preset name or a config JSON without naming its C++ type.
// Adding a family is one folder (model/<family>/) and one line in
// registry.cc.
//
//   ZT_ASSIGN_OR_RETURN(ModelSpec spec, model_spec("gpt2-tiny"));      // a preset
//   ZT_ASSIGN_OR_RETURN(ModelSpec spec2, model_spec_from_config(json)); // by model_type
//   ZT_ASSIGN_OR_RETURN(std::unique_ptr<Module> m, create_module(spec, {.max_batch = 8}));
//   ZT_ASSIGN_OR_RETURN(ModelInfo info, spec.family->info(spec.config));
//
// Thread-safety: immutable after first use; pure functions.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/module.h"
#include "model/param_layout.h"

namespace zerotrain::model {

// What the trainer and tools need to know of a model without building it.
struct ModelInfo {
  int64_t vocab_size = 0;   // V: token ids in [0, V)
  int64_t max_seq = 0;      // positions (block size)
  int64_t hidden_size = 0;  // C (the ds_config's "auto" bucket sizes derive from it)
  int64_t num_layers = 0;
  int64_t parameters = 0;  // as Hugging Face counts them (tied weights once)
  // Training FLOPs per token at sequence length T, as llm.c and the PaLM
  // appendix count them: 6·N + 12·L·C·T. For MFU.
  int64_t flops_per_token(int64_t T) const {
    return 6 * parameters + 12 * num_layers * hidden_size * T;
  }
};

struct ModelPreset {
  std::string name;  // "gpt2-tiny"
  nlohmann::json config;
  std::string description;
};

struct ModelFamily {
  std::string name;  // "gpt2": HF's model_type
  std::vector<ModelPreset> presets;
  // Each takes the family's config JSON (HF config.json form); an invalid
  // one is InvalidArgument naming the key.
  StatusOr<ModelInfo> (*info)(const nlohmann::json& config);
  StatusOr<ParamLayout> (*layout)(const nlohmann::json& config);
  StatusOr<std::unique_ptr<Module>> (*create)(const nlohmann::json& config,
                                              const ModuleOptions& options);
  // Activation bytes a module of config allocates for max (B, T) with
  // these options (its memory().activation_bytes).
  StatusOr<int64_t> (*activation_bytes)(const nlohmann::json& config, const ModuleOptions& options);
  // QLoRA: its GEMMs read Linear weights through Module::weight_rows, so
  // they may be held 4-bit (ModuleOptions.base_4bit).
  bool base_4bit = false;
};

// A family and one config of it.
struct ModelSpec {
  const ModelFamily* family = nullptr;
  nlohmann::json config;
  std::string name;  // the preset's name, or the family's
};

const std::vector<const ModelFamily*>& families();
// NotFound naming the type and the supported ones.
StatusOr<const ModelFamily*> find_family(std::string_view name);
// A preset of any family; NotFound listing every preset (and the closest).
StatusOr<ModelSpec> model_spec(std::string_view preset);
// A config JSON with "model_type" (a family name).
StatusOr<ModelSpec> model_spec_from_config(const nlohmann::json& config);
// InvalidArgument (what: the flag or option asking for it) unless family
// `name` can hold its base 4-bit, naming those that can.
Status check_4bit_base(std::string_view name, std::string_view what);
StatusOr<std::unique_ptr<Module>> create_module(const ModelSpec& spec,
                                                const ModuleOptions& options = {});

}  // namespace zerotrain::model
