// Llama-family layout (see layout.h).
#include "model/llama/layout.h"

#include "core/status.h"

namespace zerotrain::model::llama {

BlockSlots block_slots(const LlamaConfig& cfg) {
  BlockSlots s;
  int next = 0;
  s.input_norm = next++;
  s.q_weight = next++;
  if (cfg.qkv_bias) s.q_bias = next++;
  s.k_weight = next++;
  if (cfg.qkv_bias) s.k_bias = next++;
  s.v_weight = next++;
  if (cfg.qkv_bias) s.v_bias = next++;
  s.o_weight = next++;
  if (cfg.o_bias) s.o_bias = next++;
  s.post_norm = next++;
  s.gate = next++;
  s.up = next++;
  s.down = next++;
  return s;
}

ParamLayout make_layout(const LlamaConfig& cfg) {
  const Status valid = validate(cfg);
  ZT_CHECK(valid.ok(), valid.to_string());
  const int64_t V = cfg.vocab_size, Vp = cfg.padded_vocab, C = cfg.hidden_size,
                I = cfg.intermediate_size, KC = cfg.kv_dim();
  ParamLayoutBuilder b;
  b.begin_group("embed_tokens");
  b.add({.name = "model.embed_tokens.weight",
         .kind = ParamKind::kTokenEmbedding,
         .shape = {Vp, C},
         .hf_shape = {V, C}});
  for (int64_t l = 0; l < cfg.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    b.begin_group("layers." + std::to_string(l));
    b.add(
        {.name = p + "input_layernorm.weight", .kind = ParamKind::kLayerNormWeight, .shape = {C}});
    auto proj = [&](const std::string& name, int64_t out, int64_t in, bool bias, ParamKind kind) {
      b.add({.name = p + name + ".weight", .kind = kind, .shape = {out, in}});
      if (bias) b.add({.name = p + name + ".bias", .kind = ParamKind::kLinearBias, .shape = {out}});
    };
    proj("self_attn.q_proj", C, C, cfg.qkv_bias, ParamKind::kLinearWeight);
    proj("self_attn.k_proj", KC, C, cfg.qkv_bias, ParamKind::kLinearWeight);
    proj("self_attn.v_proj", KC, C, cfg.qkv_bias, ParamKind::kLinearWeight);
    proj("self_attn.o_proj", C, C, cfg.o_bias, ParamKind::kResidualProjWeight);
    b.add({.name = p + "post_attention_layernorm.weight",
           .kind = ParamKind::kLayerNormWeight,
           .shape = {C}});
    proj("mlp.gate_proj", I, C, false, ParamKind::kLinearWeight);
    proj("mlp.up_proj", I, C, false, ParamKind::kLinearWeight);
    proj("mlp.down_proj", C, I, false, ParamKind::kResidualProjWeight);
  }
  b.begin_group("norm");
  b.add({.name = "model.norm.weight", .kind = ParamKind::kLayerNormWeight, .shape = {C}});
  if (!cfg.tie_word_embeddings) {
    b.add({.name = "lm_head.weight",
           .kind = ParamKind::kLinearWeight,
           .shape = {Vp, C},
           .hf_shape = {V, C}});
  }
  return std::move(b).build();
}

}  // namespace zerotrain::model::llama
