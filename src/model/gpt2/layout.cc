// GPT-2's layout through the generic builder (see layout.h).
#include "model/gpt2/layout.h"

#include <string>

namespace zerotrain::model::gpt2 {

ParamLayout make_layout(const GptConfig& cfg) {
  const Status valid = validate(cfg);
  ZT_CHECK(valid.ok(), valid.to_string());
  const int64_t C = cfg.n_embd;
  ParamLayoutBuilder b;
  // Linear weights: ours [out, in], HF Conv1D [in, out].
  auto linear = [&](std::string name, ParamKind kind, int64_t out, int64_t in) {
    b.add({.name = std::move(name), .kind = kind, .shape = {out, in}, .hf_transposed = true});
  };
  auto vec = [&](std::string name, ParamKind kind, int64_t n) {
    b.add({.name = std::move(name), .kind = kind, .shape = {n}});
  };
  b.begin_group("embeddings");
  b.add({.name = "wte.weight",
         .kind = ParamKind::kTokenEmbedding,
         .shape = {cfg.padded_vocab, C},
         .hf_shape = {cfg.vocab_size, C}});
  b.add({.name = "wpe.weight", .kind = ParamKind::kPositionEmbedding, .shape = {cfg.seq_len, C}});
  for (int64_t l = 0; l < cfg.n_layer; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    b.begin_group("h." + std::to_string(l));
    vec(h + "ln_1.weight", ParamKind::kLayerNormWeight, C);
    vec(h + "ln_1.bias", ParamKind::kLayerNormBias, C);
    linear(h + "attn.c_attn.weight", ParamKind::kLinearWeight, 3 * C, C);
    vec(h + "attn.c_attn.bias", ParamKind::kLinearBias, 3 * C);
    linear(h + "attn.c_proj.weight", ParamKind::kResidualProjWeight, C, C);
    vec(h + "attn.c_proj.bias", ParamKind::kLinearBias, C);
    vec(h + "ln_2.weight", ParamKind::kLayerNormWeight, C);
    vec(h + "ln_2.bias", ParamKind::kLayerNormBias, C);
    linear(h + "mlp.c_fc.weight", ParamKind::kLinearWeight, 4 * C, C);
    vec(h + "mlp.c_fc.bias", ParamKind::kLinearBias, 4 * C);
    linear(h + "mlp.c_proj.weight", ParamKind::kResidualProjWeight, C, 4 * C);
    vec(h + "mlp.c_proj.bias", ParamKind::kLinearBias, C);
  }
  b.begin_group("ln_f");
  vec("ln_f.weight", ParamKind::kLayerNormWeight, C);
  vec("ln_f.bias", ParamKind::kLayerNormBias, C);
  return std::move(b).build();
}

}  // namespace zerotrain::model::gpt2
