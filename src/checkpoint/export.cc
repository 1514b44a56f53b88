// export_safetensors: CheckpointReader ("master") -> write_hf_gpt2, the
// layout rebuilt from the manifest's family and config (model/registry.h).
#include "checkpoint/export.h"

#include <map>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/peft_adapter.h"
#include "core/crc32.h"
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
  if (!m.adapter.is_null())
    return invalid_argument(where + " is a LoRA run's (adapter tensors only): export it with "
                            "--adapter (a PEFT adapter directory) or --merge --base HF_DIR");
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

namespace {

struct AdapterCheckpoint {
  model::ParamLayout base;
  std::shared_ptr<const model::AdapterPlan> plan;
  std::string prefix;
};

StatusOr<AdapterCheckpoint> adapter_checkpoint(const Manifest& m, const std::string& tag_dir) {
  const std::string where = "checkpoint " + tag_dir;
  if (m.adapter.is_null() || !m.adapter.contains("peft"))
    return invalid_argument(where + " is a full fine-tuning checkpoint, not a LoRA run's: "
                            "export it without --adapter/--merge");
  ZT_ASSIGN_OR_RETURN(model::LoraConfig cfg,
                      model::lora_from_peft_json(m.adapter["peft"], where + " manifest adapter"));
  StatusOr<const model::ModelFamily*> family = model::find_family(m.family);
  if (!family.ok()) return family.status().with_context(where);
  AdapterCheckpoint a;
  ZT_ASSIGN_OR_RETURN(a.base, (*family)->layout(m.model_config));
  a.prefix = model::family_hf_prefix(m.family);
  ZT_ASSIGN_OR_RETURN(model::AdapterPlan plan, model::plan_adapters(a.base, cfg, a.prefix));
  if (layout_entries(plan.trainable) != m.layout)
    return corruption(where + ": its parameter layout does not follow its model and adapter");
  a.plan = std::make_shared<const model::AdapterPlan>(std::move(plan));
  return a;
}

}  // namespace

Status export_peft_adapter(const std::string& tag_dir, const std::string& out_dir) {
  ZT_ASSIGN_OR_RETURN(CheckpointReader reader, CheckpointReader::open(tag_dir));
  const Manifest& m = reader.manifest();
  ZT_ASSIGN_OR_RETURN(AdapterCheckpoint a, adapter_checkpoint(m, tag_dir));
  return write_peft_adapter(out_dir, a.plan->config, a.plan->trainable, a.prefix,
                            m.family == "gpt2", [&](int64_t offset, int64_t count, float* out) {
                              return reader.read("master", offset, count, out);
                            });
}

Status export_merged_model(const std::string& tag_dir, const std::string& base_path,
                           const std::string& out_dir, DType dtype, int64_t max_shard_bytes) {
  ZT_ASSIGN_OR_RETURN(CheckpointReader reader, CheckpointReader::open(tag_dir));
  const Manifest& m = reader.manifest();
  ZT_ASSIGN_OR_RETURN(AdapterCheckpoint a, adapter_checkpoint(m, tag_dir));
  ZT_ASSIGN_OR_RETURN(ModelSource base, open_model_source(base_path));
  if (!base.read) return invalid_argument("--base " + base_path + ": has no weights");
  ZT_ASSIGN_OR_RETURN(model::ParamLayout base_layout, base.spec.family->layout(base.spec.config));
  if (layout_entries(base_layout) != layout_entries(a.base))
    return invalid_argument("--base " + base_path + " is another model than checkpoint " +
                            tag_dir + "'s base (" + m.family + " " + m.model_config.dump() + ")");
  // The frozen values' CRC, as the run computed it (Module::load_frozen).
  uint32_t crc = 0;
  std::vector<float> host;
  for (const model::TensorInfo& t : a.base.tensors()) {
    if (a.plan->of_base[static_cast<size_t>(t.index)].frozen < 0) continue;
    host.resize(static_cast<size_t>(t.numel));
    ZT_RETURN_IF_ERROR(base.read(t.offset, t.numel, host.data()));
    crc = crc32_update(crc, host.data(), host.size() * sizeof(float));
  }
  const std::string hex = model::crc32_hex(crc);
  if (m.adapter.value("base_crc32", std::string()) != hex)
    return invalid_argument("--base " + base_path + ": its weights are not the base checkpoint " +
                            tag_dir + " was trained on (CRC-32 " + hex + ", the run's " +
                            m.adapter.value("base_crc32", std::string("?")) + ")");
  nlohmann::json config = m.model_config;
  if (!config.contains("architectures")) config["architectures"] = {architecture(m.family)};
  config["torch_dtype"] = torch_dtype(dtype);
  model::ReadFlatFn merged = merged_reader(
      a.base, a.plan, base.read, [&](int64_t offset, int64_t count, float* out) {
        return reader.read("master", offset, count, out);
      });
  return write_hf_model(out_dir, config, a.base, dtype, merged, max_shard_bytes,
                        {{"format", "pt"}, {"zerotrain_tag", m.tag}});
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
