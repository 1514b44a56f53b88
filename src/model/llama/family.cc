// The Llama family's registry entries (see family.h).
#include "model/llama/family.h"

#include "model/llama/llama_model.h"

namespace zerotrain::model::llama {
namespace {

StatusOr<ModelInfo> info(const nlohmann::json& j) {
  ZT_ASSIGN_OR_RETURN(LlamaConfig c, from_json(j));
  return ModelInfo{.vocab_size = c.vocab_size,
                   .max_seq = c.max_position_embeddings,
                   .hidden_size = c.hidden_size,
                   .num_layers = c.num_layers,
                   .parameters = parameter_count(c)};
}

StatusOr<ParamLayout> layout(const nlohmann::json& j) {
  ZT_ASSIGN_OR_RETURN(LlamaConfig c, from_json(j));
  return make_layout(c);
}

StatusOr<std::unique_ptr<Module>> create(const nlohmann::json& j, const ModuleOptions& o) {
  ZT_ASSIGN_OR_RETURN(LlamaConfig c, from_json(j));
  ZT_ASSIGN_OR_RETURN(LlamaModel m, LlamaModel::create(c, o));
  return std::unique_ptr<Module>(new LlamaModel(std::move(m)));
}

StatusOr<int64_t> activation_bytes(const nlohmann::json& j, const ModuleOptions& o) {
  ZT_ASSIGN_OR_RETURN(LlamaConfig c, from_json(j));
  return LlamaModel::activation_bytes(
      c, o.max_batch, o.max_seq > 0 ? o.max_seq : c.max_position_embeddings, o.full_logits,
      o.head_rows, o.checkpoint_layers, o.bf16_compute, o.lora != nullptr);
}

ModelFamily make_family(std::string_view model_type) {
  ModelFamily f{.name = std::string(model_type),
                .presets = {},
                .info = info,
                .layout = layout,
                .create = create,
                .activation_bytes = activation_bytes,
                .base_4bit = true};
  for (const PresetInfo& p : presets_of(model_type))
    f.presets.push_back({p.name, p.config, p.description});
  return f;
}

}  // namespace

const ModelFamily& family(std::string_view model_type) {
  static const ModelFamily llama = make_family("llama");
  static const ModelFamily mistral = make_family("mistral");
  static const ModelFamily qwen2 = make_family("qwen2");
  if (model_type == "mistral") return mistral;
  if (model_type == "qwen2") return qwen2;
  ZT_CHECK(model_type == "llama", "llama::family: unknown model_type ", model_type);
  return llama;
}

}  // namespace zerotrain::model::llama
