// GptModel forward stages: encoder, pre-LN transformer block, head (ln_f,
// tied lm head, cross-entropy). Saves what the backward needs in acts_
// (layernorm outputs and gelu(fch) go to shared scratch, or on the bf16
// path straight into the GEMM's bf16 operand; the backward recomputes
// them, see activations.h).
#include <algorithm>

#include "device/ops.h"
#include "model/gpt2/gpt_model.h"

namespace zerotrain::model::gpt2 {

Status GptModel::forward_encoder() {
  return ops().encoder_forward(acts_.encoded, acts_.tokens, p(wte(base_layout())), p(wpe(base_layout())), B_,
                               T_, cfg_.n_embd, cfg_.vocab_size, doc_positions());
}

Status GptModel::forward_block(int64_t l) {
  const int64_t B = B_, T = T_, C = cfg_.n_embd;
  const LayerActivations& a = acts_.layers[static_cast<size_t>(l)];
  const float* x = l == 0 ? acts_.encoded : acts_.layers[static_cast<size_t>(l) - 1].res3;
  auto w = [&](int slot) { return p(block_tensor(base_layout(), l, slot)); };
  auto wt = [&](int slot) -> const TensorInfo& { return block_tensor(base_layout(), l, slot); };

  // qkv and fch: fp32, or on the bf16 path rounded by their GEMMs into the
  // saved qkv16 and fch16 (the only form the attention and gelu read).
  ZT_ASSIGN_OR_RETURN(Operand ln1,
                      layernorm_operand(x, a.ln1_mean, a.ln1_rstd, w(kLn1Weight), w(kLn1Bias)));
  ZT_RETURN_IF_ERROR(
      linear_fwd(saved(a.qkv, a.qkv16), ln1, wt(kAttnWeight), w(kAttnBias), C, 3 * C));
  ZT_RETURN_IF_ERROR(attention_fwd(a));
  ZT_RETURN_IF_ERROR(
      linear_fwd(acts_.proj, attention_operand(a), wt(kAttnProjWeight), w(kAttnProjBias), C, C));
  ZT_RETURN_IF_ERROR(ops().residual_forward(a.res2, x, acts_.proj, B * T * C));
  ZT_ASSIGN_OR_RETURN(
      Operand ln2, layernorm_operand(a.res2, a.ln2_mean, a.ln2_rstd, w(kLn2Weight), w(kLn2Bias)));
  ZT_RETURN_IF_ERROR(linear_fwd(saved(a.fch, a.fch16), ln2, wt(kFcWeight), w(kFcBias), C, 4 * C));
  ZT_ASSIGN_OR_RETURN(Operand gelu, gelu_operand(a));
  ZT_RETURN_IF_ERROR(linear_fwd(acts_.proj, gelu, wt(kFcProjWeight), w(kFcProjBias), 4 * C, C));
  return ops().residual_forward(a.res3, a.res2, acts_.proj, B * T * C);
}

Status GptModel::forward_head() {
  const int64_t B = B_, T = T_, C = cfg_.n_embd, Vp = cfg_.padded_vocab, BT = B_ * T_;
  const float* x = cfg_.n_layer > 0 ? acts_.layers.back().res3 : acts_.encoded;
  ZT_RETURN_IF_ERROR(ops().layernorm_forward(acts_.lnf, acts_.lnf_mean, acts_.lnf_rstd, x,
                                             p(lnf_weight(base_layout())), p(lnf_bias(base_layout())), B, T,
                                             C));
  // Tied lm head: logits = lnf · wteᵀ over all Vp rows (the padding rows are
  // zero and the cross-entropy ignores their columns), a chunk of rows at a
  // time. For a backward, each chunk's dlogits (at unit dloss) replace its
  // logits at once and give that chunk's d lnf and share of d wte, so the
  // [B,T,Vp] logits never exist whole; backward_head scales by dloss.
  ZT_RETURN_IF_ERROR(prepare_head());
  if (for_backward_) {
    ZT_RETURN_IF_ERROR(zero(acts_.dwte, Vp * C));
    ZT_RETURN_IF_ERROR(zero(acts_.dln, BT * C));
  }
  const int64_t chunk = has_targets_ ? acts_.head_rows : BT;
  for (int64_t r0 = 0; r0 < BT; r0 += chunk) {
    const int64_t rows = std::min(chunk, BT - r0);
    // bf16: rounded once for both GEMMs.
    ZT_ASSIGN_OR_RETURN(const Operand lnf, head_operand(acts_.lnf + r0 * C, rows));
    ZT_RETURN_IF_ERROR(head_fwd(acts_.logits, lnf, rows));
    if (!has_targets_) continue;
    const int32_t* targets = acts_.targets + r0;
    float* losses = acts_.losses + r0;
    const int64_t V = cfg_.vocab_size;
    if (!for_backward_) {
      ZT_RETURN_IF_ERROR(
          ops().crossentropy_forward(losses, nullptr, acts_.logits, targets, 1, rows, V, Vp));
      continue;
    }
    // Loss and dlogits in one pass over the chunk: fp32 overwrites the
    // logits with dlogits, bf16 writes them rounded into the dout scratch.
    Operand dlogits = acts_.logits;
    if (bf16_compute()) {
      ZT_RETURN_IF_ERROR(ops().crossentropy_forward_backward_bf16(
          losses, d16(), acts_.logits, targets, unit_dloss_, 1, rows, V, Vp));
      dlogits = d16();
    } else {
      ZT_RETURN_IF_ERROR(ops().crossentropy_forward_backward(losses, acts_.logits, acts_.logits,
                                                             targets, unit_dloss_, 1, rows, V, Vp));
    }
    ZT_RETURN_IF_ERROR(head_bwd(acts_.dln + r0 * C, acts_.dwte, dlogits, lnf, rows));
  }
  return ok_status();
}

}  // namespace zerotrain::model::gpt2
