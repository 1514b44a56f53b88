// GptModel backward stages, the forward's in reverse. acts_.dres carries
// d loss / d (residual stream) from stage to stage; every kernel backward
// ADDS, so the scratch it adds into is zeroed first while parameter
// gradients accumulate across backward() calls — except a linear layer's
// input gradient into a fresh scratch, which its GEMM overwrites.
#include "device/ops.h"
#include "model/gpt2/gpt_model.h"

namespace zerotrain::model::gpt2 {

Status GptModel::backward_head() {
  const int64_t B = B_, T = T_, C = cfg_.n_embd, BT = B_ * T_, Vp = cfg_.padded_vocab;
  const TensorInfo& lnf_w = lnf_weight(base_layout());
  const float* x = cfg_.n_layer > 0 ? acts_.layers.back().res3 : acts_.encoded;
  // The forward ran the lm head's backward at unit dloss (forward_head):
  // scale its d lnf and d wte by this backward's dloss.
  if (!frozen(wte(base_layout())))
    ZT_RETURN_IF_ERROR(ops().axpy(g(wte(base_layout())), dloss_, acts_.dwte, Vp * C));
  ZT_RETURN_IF_ERROR(ops().scale(
      Tensor(acts_.dln, DType::kFloat32, static_cast<size_t>(BT * C), &device()), dloss_));
  ZT_RETURN_IF_ERROR(zero(acts_.dres, BT * C));
  return ops().layernorm_backward(acts_.dres, grad_or_sink(lnf_w),
                                  grad_or_sink(lnf_bias(base_layout())), acts_.dln, x,
                                  p(lnf_w), acts_.lnf_mean, acts_.lnf_rstd, B, T, C);
}

Status GptModel::backward_block(int64_t l) {
  const int64_t B = B_, T = T_, C = cfg_.n_embd;
  const LayerActivations& a = acts_.layers[static_cast<size_t>(l)];
  const float* x = l == 0 ? acts_.encoded : acts_.layers[static_cast<size_t>(l) - 1].res3;
  auto w = [&](int slot) { return p(block_tensor(base_layout(), l, slot)); };
  auto wt = [&](int slot) -> const TensorInfo& { return block_tensor(base_layout(), l, slot); };
  auto dw = [&](int slot) { return g(block_tensor(base_layout(), l, slot)); };
  auto dnorm = [&](int slot) { return grad_or_sink(block_tensor(base_layout(), l, slot)); };
  Activations& s = acts_;  // scratch

  // MLP: res3 = res2 + c_proj(gelu(c_fc(ln_2(res2)))); d res3 is in dres.
  // gelu(fch) and ln_2(res2) are recomputed (into scratch, or the bf16
  // operand scratch one after the other): the same kernels on the same
  // saved inputs give the forward's values bit for bit.
  ZT_ASSIGN_OR_RETURN(const Operand gelu, gelu_operand(a));
  ZT_RETURN_IF_ERROR(linear_bwd(s.dfch_gelu, dw(kFcProjWeight), dw(kFcProjBias), s.dres, gelu,
                                wt(kFcProjWeight), 4 * C, C, /*dinp_accumulate=*/false));
  ZT_ASSIGN_OR_RETURN(const Operand dfch, gelu_backward_operand(a));
  ZT_ASSIGN_OR_RETURN(const Operand ln2, layernorm_operand(a.res2, a.ln2_mean, a.ln2_rstd,
                                                           w(kLn2Weight), w(kLn2Bias)));
  ZT_RETURN_IF_ERROR(linear_bwd(s.dln, dw(kFcWeight), dw(kFcBias), dfch, ln2, wt(kFcWeight), C,
                                4 * C, /*dinp_accumulate=*/false));
  // dres (= d res3, the residual branch) += ln_2's input gradient: d res2.
  ZT_RETURN_IF_ERROR(ops().layernorm_backward(s.dres, dnorm(kLn2Weight), dnorm(kLn2Bias), s.dln, a.res2,
                                              w(kLn2Weight), a.ln2_mean, a.ln2_rstd, B, T, C));

  // Attention: res2 = x + c_proj(attn(c_attn(ln_1(x)))). On the bf16 path
  // d atty and d qkv exist in bf16 only (the attention reads and writes
  // them so; see attention_bwd).
  ZT_RETURN_IF_ERROR(linear_bwd(attention_input_gradient(), dw(kAttnProjWeight), dw(kAttnProjBias),
                                s.dres, attention_operand(a), wt(kAttnProjWeight), C, C,
                                /*dinp_accumulate=*/false));
  ZT_RETURN_IF_ERROR(attention_bwd(a));
  ZT_ASSIGN_OR_RETURN(const Operand ln1,
                      layernorm_operand(x, a.ln1_mean, a.ln1_rstd, w(kLn1Weight), w(kLn1Bias)));
  ZT_RETURN_IF_ERROR(linear_bwd(s.dln, dw(kAttnWeight), dw(kAttnBias), qkv_gradient(), ln1,
                                wt(kAttnWeight), C, 3 * C, /*dinp_accumulate=*/false));
  return ops().layernorm_backward(s.dres, dnorm(kLn1Weight), dnorm(kLn1Bias), s.dln, x,
                                  w(kLn1Weight), a.ln1_mean, a.ln1_rstd, B, T, C);
}

Status GptModel::backward_encoder() {
  const bool wte_frozen = frozen(wte(base_layout())), wpe_frozen = frozen(wpe(base_layout()));
  float* dwte = g(wte(base_layout()));
  float* dwpe = g(wpe(base_layout()));
  if (wte_frozen && wpe_frozen) return ok_status();  // LoRA
  if (wte_frozen)
    return invalid_argument("gpt2: modules_to_save wpe needs wte trained too (the encoder's "
                            "backward writes both)");
  return ops().encoder_backward(dwte, dwpe, acts_.dres, acts_.tokens, B_, T_, cfg_.n_embd,
                                doc_positions());
}

}  // namespace zerotrain::model::gpt2
