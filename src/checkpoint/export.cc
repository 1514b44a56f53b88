// export_safetensors: CheckpointReader ("master") -> write_hf_gpt2, the
// layout rebuilt from the manifest's family and config (model/registry.h).
#include "checkpoint/export.h"

#include <map>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/hf/gpt2.h"
#include "checkpoint/hf/model_dir.h"
#include "model/param_layout.h"
#include "model/registry.h"

namespace zerotrain::checkpoint {

namespace {

// The checkpoint's layout, rebuilt from its model and checked against the
// manifest's.
StatusOr<model::ParamLayout> checkpoint_layout(const Manifest& m, const std::string& tag_dir) {
  const std::string where = "checkpoint " + tag_dir;
  StatusOr<const model::ModelFamily*> family = model::find_family(m.family);
  if (!family.ok()) return family.status().with_context(where);
  StatusOr<model::ParamLayout> layout = (*family)->layout(m.model_config);
  if (!layout.ok()) return layout.status().with_context(where);
  if (layout_entries(*layout) != m.layout)
    return corruption(where + ": its parameter layout does not follow its model");
  return layout;
}

std::string architecture(const std::string& family) {
  if (family == "gpt2") return "GPT2LMHeadModel";
  if (family == "mistral") return "MistralForCausalLM";
  if (family == "qwen2") return "Qwen2ForCausalLM";
  return "LlamaForCausalLM";
}

std::string torch_dtype(DType d) {
  return d == DType::kBFloat16 ? "bfloat16" : d == DType::kFloat16 ? "float16" : "float32";
}

}  // namespace

Status export_hf_model(const std::string& tag_dir, const std::string& out_dir, DType dtype,
                       int64_t max_shard_bytes) {
  ZT_ASSIGN_OR_RETURN(CheckpointReader reader, CheckpointReader::open(tag_dir));
  const Manifest& m = reader.manifest();
  ZT_ASSIGN_OR_RETURN(model::ParamLayout layout, checkpoint_layout(m, tag_dir));
  nlohmann::json config = m.model_config;
  if (!config.contains("architectures")) config["architectures"] = {architecture(m.family)};
  config["torch_dtype"] = torch_dtype(dtype);
  return write_hf_model(out_dir, config, layout, dtype,
                        [&](int64_t offset, int64_t count, float* out) {
                          return reader.read("master", offset, count, out);
                        },
                        max_shard_bytes, {{"format", "pt"}, {"zerotrain_tag", m.tag}});
}

Status export_safetensors(const std::string& tag_dir, const std::string& out_path, DType dtype) {
  ZT_ASSIGN_OR_RETURN(CheckpointReader reader, CheckpointReader::open(tag_dir));
  const Manifest& m = reader.manifest();
  ZT_ASSIGN_OR_RETURN(model::ParamLayout layout, checkpoint_layout(m, tag_dir));
  std::map<std::string, std::string> metadata{{"format", "pt"}, {"zerotrain_tag", m.tag}};
  const nlohmann::json& counters = m.engine_state.value("counters", nlohmann::json::object());
  metadata["zerotrain_global_steps"] = std::to_string(counters.value("global_steps", int64_t{0}));
  for (const auto& [key, value] : m.model_config.items())
    if (value.is_number_integer() || value.is_string())
      metadata[key] = value.is_string() ? value.get<std::string>() : value.dump();
  return write_hf_gpt2(
      out_path, layout, dtype,
      [&](int64_t offset, int64_t count, float* out) {
        return reader.read("master", offset, count, out);
      },
      metadata);
}

}  // namespace zerotrain::checkpoint
