// LoraConfig: a LoRA adapter's hyper-parameters as Hugging Face PEFT's
// LoraConfig names them (adapter_config.json), and PEFT's rule for which
// modules it adapts. What `train --lora-*`, the config file's "lora"
// section and `--init-adapter/--adapter DIR` all produce.
//
//   LoraConfig c{.r = 8, .alpha = 16, .target_modules = {"q_proj", "v_proj"}};
//   bool hit = c.targets("model.layers.0.self_attn.q_proj");   // suffix rule
//   float s = c.scale();                                       // alpha / r
//   nlohmann::json j = to_peft_json(c, "HuggingFaceTB/SmolLM-135M");
//
// == Matching (PEFT's check_target_module_exists) ==
// target_regex set: the module's full HF name must match it entirely
// (std::regex ECMAScript, which agrees with Python's re for the patterns
// PEFT users write: alternation, classes, .*). Else target_modules: the
// name equals an entry or ends with "." + entry. all_linear ("all-linear"):
// every Linear but the output layer (lm_head). modules_to_save: modules
// whose name ends with an entry get a full trainable copy.
//
// Thread-safety: a value type.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace zerotrain::model {

struct LoraConfig {
  int64_t r = 8;
  double alpha = 8.0;  // PEFT's lora_alpha
  double dropout = 0.0;
  bool use_rslora = false;             // scale alpha / sqrt(r) instead of alpha / r
  std::vector<std::string> target_modules{};  // name suffixes
  std::string target_regex{};                 // PEFT's target_modules given as a string
  bool all_linear = false;                    // "all-linear"
  std::vector<std::string> modules_to_save{};
  bool gaussian_init = false;  // init_lora_weights "gaussian": A ~ N(0, 1/r); else kaiming-uniform
  std::string base_model{};    // base_model_name_or_path, informational

  double scale() const;
  // Whether module `name` (its full HF name, e.g. "model.layers.0.mlp.up_proj")
  // is a target; is_output_layer: it is the lm head (all-linear leaves it out).
  bool targets(const std::string& name, bool is_output_layer) const;
  bool saves(const std::string& name) const;
  // Sets the targets from names as users write them: one "all" or
  // "all-linear"; one regex (any of * ( | \ in the single entry, PEFT's
  // string form); else module names.
  void set_targets(const std::vector<std::string>& names);
  // "r=8 alpha=16 (scale 2) targets q_proj,v_proj"
  std::string describe() const;
};

// InvalidArgument naming the key for r < 1, alpha <= 0, dropout outside
// [0, 1), no target, an invalid regex.
Status validate(const LoraConfig& c);

// PEFT's adapter_config.json for `c` (peft_type LORA, task_type CAUSAL_LM,
// bias "none"; every key PEFT's LoraConfig writes that zerotrain has a
// value for).
nlohmann::json to_peft_json(const LoraConfig& c);
// From adapter_config.json; `where` (its path) heads every error. Refused
// by name: a missing r, lora_alpha or target_modules, peft_type other than
// LORA, bias other than "none", use_dora, rank_pattern / alpha_pattern,
// layers_to_transform, an unknown init_lora_weights.
StatusOr<LoraConfig> lora_from_peft_json(const nlohmann::json& j, const std::string& where);

}  // namespace zerotrain::model
