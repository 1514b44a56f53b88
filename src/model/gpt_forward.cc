// GptModel forward stages: encoder, pre-LN transformer block, head (ln_f,
// tied lm head, cross-entropy). Saves what the backward needs in acts_
// (layernorm outputs and gelu(fch) go to shared scratch; the backward
// recomputes them, see activations.h).
#include "kernels/cpu/ops.h"
#include "model/gpt_model.h"

namespace zerotrain::model {

namespace kc = kernels::cpu;

Status GptModel::forward_encoder() {
  return kc::encoder_forward(acts_.encoded, tokens_.data(), p(layout_.wte()), p(layout_.wpe()), B_,
                             T_, cfg_.n_embd, cfg_.vocab_size);
}

Status GptModel::forward_block(int64_t l) {
  const int64_t B = B_, T = T_, C = cfg_.n_embd, NH = cfg_.n_head;
  const LayerActivations& a = acts_.layers[static_cast<size_t>(l)];
  const float* x = l == 0 ? acts_.encoded : acts_.layers[static_cast<size_t>(l) - 1].res3;
  auto w = [&](int slot) { return p(layout_.block_tensor(l, slot)); };

  kc::layernorm_forward(acts_.ln, a.ln1_mean, a.ln1_rstd, x, w(kLn1Weight), w(kLn1Bias), B, T, C);
  ZT_RETURN_IF_ERROR(linear_fwd(a.qkv, acts_.ln, w(kAttnWeight), w(kAttnBias), C, 3 * C));
  ZT_RETURN_IF_ERROR(options_.recompute_attention
                         ? kc::attention_forward_lse(a.atty, a.att, a.qkv, B, T, C, NH)
                         : kc::attention_forward(a.atty, a.att, a.qkv, B, T, C, NH));
  ZT_RETURN_IF_ERROR(linear_fwd(acts_.proj, a.atty, w(kAttnProjWeight), w(kAttnProjBias), C, C));
  kc::residual_forward(a.res2, x, acts_.proj, B * T * C);
  kc::layernorm_forward(acts_.ln, a.ln2_mean, a.ln2_rstd, a.res2, w(kLn2Weight), w(kLn2Bias), B,
                        T, C);
  ZT_RETURN_IF_ERROR(linear_fwd(a.fch, acts_.ln, w(kFcWeight), w(kFcBias), C, 4 * C));
  kc::gelu_forward(acts_.fch_gelu, a.fch, B * T * 4 * C);
  ZT_RETURN_IF_ERROR(
      linear_fwd(acts_.proj, acts_.fch_gelu, w(kFcProjWeight), w(kFcProjBias), 4 * C, C));
  kc::residual_forward(a.res3, a.res2, acts_.proj, B * T * C);
  return ok_status();
}

Status GptModel::forward_head() {
  const int64_t B = B_, T = T_, C = cfg_.n_embd;
  const float* x = cfg_.n_layer > 0 ? acts_.layers.back().res3 : acts_.encoded;
  kc::layernorm_forward(acts_.lnf, acts_.lnf_mean, acts_.lnf_rstd, x, p(layout_.lnf_weight()),
                        p(layout_.lnf_bias()), B, T, C);
  // Tied lm head: logits = lnf · wteᵀ over all Vp rows (the padding rows are
  // zero and the cross-entropy ignores their columns).
  ZT_RETURN_IF_ERROR(
      linear_fwd(acts_.logits, acts_.lnf, p(layout_.wte()), nullptr, C, cfg_.padded_vocab));
  if (targets_.empty()) return ok_status();
  return kc::crossentropy_forward(acts_.losses, acts_.ce_lse, acts_.logits, targets_.data(), B, T,
                                  cfg_.vocab_size, cfg_.padded_vocab);
}

}  // namespace zerotrain::model
