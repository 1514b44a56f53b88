// The families this build has, and lookup by preset or model_type.
#include "model/registry.h"

#include <algorithm>

#include "config/suggest.h"
#include "model/gpt2/family.h"
#include "model/llama/family.h"

namespace zerotrain::model {

const std::vector<const ModelFamily*>& families() {
  static const std::vector<const ModelFamily*> all = {
      &gpt2::family(), &llama::family("llama"), &llama::family("mistral"), &llama::family("qwen2")};
  return all;
}

StatusOr<const ModelFamily*> find_family(std::string_view name) {
  std::string names;
  for (const ModelFamily* f : families()) {
    if (f->name == name) return f;
    names += (names.empty() ? "" : ", ") + f->name;
  }
  return not_found("model_type \"" + std::string(name) +
                   "\" is not supported (supported: " + names + ")");
}

StatusOr<ModelSpec> model_spec(std::string_view preset) {
  std::vector<std::string> names;
  for (const ModelFamily* f : families())
    for (const ModelPreset& p : f->presets) {
      if (p.name == preset) return ModelSpec{f, p.config, p.name};
      names.push_back(p.name);
    }
  std::string msg = "unknown model preset '" + std::string(preset) + "'";
  if (std::optional<std::string> near = config::closest_match(preset, names))
    msg += "; did you mean '" + *near + "'?";
  std::string all;
  for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
  return not_found(msg + " (valid: " + all + ")");
}

StatusOr<ModelSpec> model_spec_from_config(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("model_type") || !config["model_type"].is_string())
    return invalid_argument("model config: needs a \"model_type\" string (e.g. \"gpt2\")");
  const std::string type = config["model_type"].get<std::string>();
  ZT_ASSIGN_OR_RETURN(const ModelFamily* f, find_family(type));
  ZT_RETURN_IF_ERROR(f->info(config).status());  // validates
  return ModelSpec{f, config, type};
}

Status check_4bit_base(std::string_view name, std::string_view what) {
  ZT_ASSIGN_OR_RETURN(const ModelFamily* f, find_family(name));
  if (f->base_4bit) return ok_status();
  std::string can;
  for (const ModelFamily* g : families())
    if (g->base_4bit) can += (can.empty() ? "" : ", ") + g->name;
  return invalid_argument(std::string(what) + ": 4-bit base weights (QLoRA) are implemented for " +
                          can + ", not " + std::string(name) +
                          "; train its LoRA adapters over the fp32 base");
}

StatusOr<std::unique_ptr<Module>> create_module(const ModelSpec& spec,
                                                const ModuleOptions& options) {
  if (spec.family == nullptr) return invalid_argument("create_module: no model family");
  return spec.family->create(spec.config, options);
}

}  // namespace zerotrain::model
