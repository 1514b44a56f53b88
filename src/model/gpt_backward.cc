// GptModel backward stages, the forward's in reverse. acts_.dres carries
// d loss / d (residual stream) from stage to stage; every kernel backward
// ADDS, so the scratch it adds into is zeroed first while parameter
// gradients accumulate across backward() calls — except a linear layer's
// input gradient into a fresh scratch, which its GEMM overwrites.
#include <cstring>

#include "device/cpu/kernels/ops.h"
#include "model/gpt_model.h"

namespace zerotrain::model {

namespace kc = zerotrain::device::cpu;

namespace {
void zero(float* p, int64_t n) { std::memset(p, 0, static_cast<size_t>(n) * sizeof(float)); }
}  // namespace

Status GptModel::backward_head() {
  const int64_t B = B_, T = T_, C = cfg_.n_embd, BT = B_ * T_, Vp = cfg_.padded_vocab;
  const TensorInfo& wte = layout_.wte();
  const TensorInfo& lnf_w = layout_.lnf_weight();
  const float* x = cfg_.n_layer > 0 ? acts_.layers.back().res3 : acts_.encoded;
  // The forward ran the lm head's backward at unit dloss (forward_head):
  // scale its d lnf and d wte by this backward's dloss.
  float* dwte = g(wte);
  const float* part = acts_.dwte;
  const float scale = dloss_;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < Vp * C; ++i) dwte[i] += scale * part[i];
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < BT * C; ++i) acts_.dln[i] *= scale;
  zero(acts_.dres, BT * C);
  kc::layernorm_backward(acts_.dres, g(lnf_w), g(layout_.lnf_bias()), acts_.dln, x, p(lnf_w),
                         acts_.lnf_mean, acts_.lnf_rstd, B, T, C);
  return ok_status();
}

Status GptModel::backward_block(int64_t l) {
  const int64_t B = B_, T = T_, C = cfg_.n_embd;
  const LayerActivations& a = acts_.layers[static_cast<size_t>(l)];
  const float* x = l == 0 ? acts_.encoded : acts_.layers[static_cast<size_t>(l) - 1].res3;
  auto w = [&](int slot) { return p(layout_.block_tensor(l, slot)); };
  auto wt = [&](int slot) -> const TensorInfo& { return layout_.block_tensor(l, slot); };
  auto dw = [&](int slot) { return g(layout_.block_tensor(l, slot)); };
  Activations& s = acts_;  // scratch

  // MLP: res3 = res2 + c_proj(gelu(c_fc(ln_2(res2)))); d res3 is in dres.
  // gelu(fch) and ln_2(res2) are recomputed (into scratch, or the bf16
  // operand scratch one after the other): the same kernels on the same
  // saved inputs give the forward's values bit for bit.
  ZT_RETURN_IF_ERROR(linear_bwd(s.dfch_gelu, dw(kFcProjWeight), dw(kFcProjBias), s.dres,
                                gelu_operand(a), wt(kFcProjWeight), 4 * C, C,
                                /*dinp_accumulate=*/false));
  const Operand dfch = gelu_backward_operand(a);
  const Operand ln2 = layernorm_operand(a.res2, a.ln2_mean, a.ln2_rstd, w(kLn2Weight), w(kLn2Bias));
  ZT_RETURN_IF_ERROR(linear_bwd(s.dln, dw(kFcWeight), dw(kFcBias), dfch, ln2, wt(kFcWeight), C,
                                4 * C, /*dinp_accumulate=*/false));
  // dres (= d res3, the residual branch) += ln_2's input gradient: d res2.
  kc::layernorm_backward(s.dres, dw(kLn2Weight), dw(kLn2Bias), s.dln, a.res2, w(kLn2Weight),
                         a.ln2_mean, a.ln2_rstd, B, T, C);

  // Attention: res2 = x + c_proj(attn(c_attn(ln_1(x)))). On the bf16 path
  // d atty and d qkv exist in bf16 only (the attention reads and writes
  // them so; see attention_bwd).
  ZT_RETURN_IF_ERROR(linear_bwd(attention_input_gradient(), dw(kAttnProjWeight), dw(kAttnProjBias),
                                s.dres, attention_operand(a), wt(kAttnProjWeight), C, C,
                                /*dinp_accumulate=*/false));
  ZT_RETURN_IF_ERROR(attention_bwd(a));
  const Operand ln1 = layernorm_operand(x, a.ln1_mean, a.ln1_rstd, w(kLn1Weight), w(kLn1Bias));
  ZT_RETURN_IF_ERROR(linear_bwd(s.dln, dw(kAttnWeight), dw(kAttnBias), qkv_gradient(), ln1,
                                wt(kAttnWeight), C, 3 * C, /*dinp_accumulate=*/false));
  kc::layernorm_backward(s.dres, dw(kLn1Weight), dw(kLn1Bias), s.dln, x, w(kLn1Weight), a.ln1_mean,
                         a.ln1_rstd, B, T, C);
  return ok_status();
}

void GptModel::backward_encoder() {
  kc::encoder_backward(g(layout_.wte()), g(layout_.wpe()), acts_.dres, tokens_.data(), B_, T_,
                       cfg_.n_embd);
}

}  // namespace zerotrain::model
