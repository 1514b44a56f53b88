// GPT-2's registry entry (see family.h).
#include "model/gpt2/family.h"

#include "model/gpt2/gpt_model.h"

namespace zerotrain::model::gpt2 {
namespace {

StatusOr<ModelInfo> info(const nlohmann::json& j) {
  ZT_ASSIGN_OR_RETURN(GptConfig c, from_json(j));
  return ModelInfo{.vocab_size = c.vocab_size,
                   .max_seq = c.seq_len,
                   .hidden_size = c.n_embd,
                   .num_layers = c.n_layer,
                   .parameters = parameter_count(c)};
}

StatusOr<ParamLayout> layout(const nlohmann::json& j) {
  ZT_ASSIGN_OR_RETURN(GptConfig c, from_json(j));
  return make_layout(c);
}

StatusOr<std::unique_ptr<Module>> create(const nlohmann::json& j, const ModuleOptions& o) {
  ZT_ASSIGN_OR_RETURN(GptConfig c, from_json(j));
  ZT_ASSIGN_OR_RETURN(GptModel m, GptModel::create(c, o));
  return std::unique_ptr<Module>(new GptModel(std::move(m)));
}

StatusOr<int64_t> activation_bytes(const nlohmann::json& j, const ModuleOptions& o) {
  ZT_ASSIGN_OR_RETURN(GptConfig c, from_json(j));
  return GptModel::activation_bytes(c, o.max_batch, o.max_seq > 0 ? o.max_seq : c.seq_len,
                                    o.bf16_compute, o.recompute_attention, o.full_logits,
                                    o.head_rows, o.checkpoint_layers);
}

ModelFamily make_family() {
  ModelFamily f{.name = "gpt2",
                .presets = {},
                .info = info,
                .layout = layout,
                .create = create,
                .activation_bytes = activation_bytes,
                .base_4bit = false};  // its GEMMs read fp32 weights directly
  for (const PresetInfo& p : list_presets())
    f.presets.push_back({p.name, to_json(p.config), p.description});
  return f;
}

}  // namespace

const ModelFamily& family() {
  static const ModelFamily f = make_family();
  return f;
}

}  // namespace zerotrain::model::gpt2
