// LlamaModel's blocks on the bf16 path (bf16_compute without adapters; see
// llama_model.h and activations.h), the fp32 blocks' math (llama_stages.cc)
// at autocast's rounding points. Every GEMM operand is written in bf16 by
// the op before it: the norms into the input scratch n16 (x16_), SwiGLU
// and the attention's output gradient there too, the output gradients
// into the gradient scratch d16 (d16_), each used up before the next op
// overwrites it. The residual stream and its gradient stay fp32.
#include <algorithm>

#include "device/ops.h"
#include "model/llama/llama_model.h"

namespace zerotrain::model::llama {

Status LlamaModel::forward_block_bf16(int64_t l) {
  const int64_t BT = B_ * T_, C = cfg_.hidden_size, KC = cfg_.kv_dim(), I = cfg_.intermediate_size,
                NH = cfg_.num_heads;
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  const LayerActivations& a = acts_.layers[static_cast<size_t>(l)];
  const BlockSlots& s = slots_;
  const float* x = input_of(l);
  Activations& k = acts_;
  const device::Ops& o = ops();
  BFloat16* n16 = x16_.as<BFloat16>();

  // Attention: res2 = x + o_proj(attn(rope(q, k), v)), q/k/v of input_layernorm(x).
  ZT_RETURN_IF_ERROR(
      o.rmsnorm_forward_bf16(n16, a.rstd1, x, p(block(l, s.input_norm)), BT, C, eps));
  ZT_RETURN_IF_ERROR(linear16(a.q16, n16, block(l, s.q_weight), block_bias(l, s.q_bias), C, C));
  ZT_RETURN_IF_ERROR(linear16(a.k16, n16, block(l, s.k_weight), block_bias(l, s.k_bias), C, KC));
  ZT_RETURN_IF_ERROR(linear16(a.v16, n16, block(l, s.v_weight), block_bias(l, s.v_bias), C, KC));
  ZT_RETURN_IF_ERROR(o.rope_pack_qkv_bf16(k.qkv16, a.q16, a.k16, a.v16, k.rope_cos, k.rope_sin, B_,
                                          T_, NH, cfg_.num_kv_heads, cfg_.head_dim(),
                                          doc_positions()));
  ZT_RETURN_IF_ERROR(o.attention_forward_bf16(a.atty16, nullptr, a.lse, k.qkv16, B_, T_, C, NH,
                                              attention_first_key(cfg_.windowed(l))));
  ZT_RETURN_IF_ERROR(
      linear16(k.proj, a.atty16, block(l, s.o_weight), block_bias(l, s.o_bias), C, C));
  ZT_RETURN_IF_ERROR(o.residual_forward(a.res2, x, k.proj, BT * C));

  // MLP: res3 = res2 + down(silu(gate(n))·up(n)), n = post_attention_layernorm(res2).
  ZT_RETURN_IF_ERROR(
      o.rmsnorm_forward_bf16(n16, a.rstd2, a.res2, p(block(l, s.post_norm)), BT, C, eps));
  ZT_RETURN_IF_ERROR(linear16(a.gate16, n16, block(l, s.gate), nullptr, C, I));
  ZT_RETURN_IF_ERROR(linear16(a.up16, n16, block(l, s.up), nullptr, C, I));
  ZT_RETURN_IF_ERROR(o.swiglu_forward_bf16(n16, a.gate16, a.up16, BT * I));
  ZT_RETURN_IF_ERROR(linear16(k.proj, n16, block(l, s.down), nullptr, I, C));
  return o.residual_forward(a.res3, a.res2, k.proj, BT * C);
}

Status LlamaModel::backward_block_bf16(int64_t l) {
  const int64_t BT = B_ * T_, C = cfg_.hidden_size, KC = cfg_.kv_dim(), I = cfg_.intermediate_size,
                NH = cfg_.num_heads;
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  const LayerActivations& a = acts_.layers[static_cast<size_t>(l)];
  const BlockSlots& s = slots_;
  const float* x = input_of(l);
  Activations& k = acts_;
  const device::Ops& o = ops();
  BFloat16* n16 = x16_.as<BFloat16>();
  BFloat16* d16 = d16_.as<BFloat16>();

  // MLP; d res3 is in dres. silu(gate)·up and the norm are recomputed.
  ZT_RETURN_IF_ERROR(o.swiglu_forward_bf16(n16, a.gate16, a.up16, BT * I));
  ZT_ASSIGN_OR_RETURN(const BFloat16* dres16, rounded(k.dres, BT * C, d16_));
  ZT_RETURN_IF_ERROR(linear16_bwd(k.dact, block(l, s.down), nullptr, dres16, n16, I, C, false));
  BFloat16 *dgate16 = d16, *dup16 = d16 + BT * I;
  ZT_RETURN_IF_ERROR(o.swiglu_backward_bf16(dgate16, dup16, k.dact, a.gate16, a.up16, BT * I));
  ZT_RETURN_IF_ERROR(
      o.rmsnorm_forward_bf16(n16, nullptr, a.res2, p(block(l, s.post_norm)), BT, C, eps));
  ZT_RETURN_IF_ERROR(linear16_bwd(k.dln, block(l, s.gate), nullptr, dgate16, n16, C, I, false));
  ZT_RETURN_IF_ERROR(linear16_bwd(k.dln, block(l, s.up), nullptr, dup16, n16, C, I, true));
  ZT_RETURN_IF_ERROR(o.rmsnorm_backward(k.dres, grad_or_sink(block(l, s.post_norm)), k.dln, a.res2,
                                        p(block(l, s.post_norm)), a.rstd2, BT, C));

  // Attention; dres now holds d res2. d atty goes to n16 in bf16 (the
  // attention's backward reads it so), d q/k/v to d16.
  ZT_ASSIGN_OR_RETURN(dres16, rounded(k.dres, BT * C, d16_));
  BFloat16* datty16 = n16;
  ZT_RETURN_IF_ERROR(
      linear16_bwd(datty16, block(l, s.o_weight), block_bias(l, s.o_bias), dres16, a.atty16, C, C));
  ZT_RETURN_IF_ERROR(o.rope_pack_qkv_bf16(k.qkv16, a.q16, a.k16, a.v16, k.rope_cos, k.rope_sin, B_,
                                          T_, NH, cfg_.num_kv_heads, cfg_.head_dim(),
                                          doc_positions()));
  ZT_RETURN_IF_ERROR(o.attention_backward_bf16(k.dqkv16, datty16, k.qkv16, nullptr, a.lse, B_, T_,
                                               C, NH, attention_first_key(cfg_.windowed(l))));
  BFloat16 *dq16 = d16, *dk16 = d16 + BT * C, *dv16 = d16 + BT * (C + KC);
  ZT_RETURN_IF_ERROR(o.rope_unpack_qkv_backward_bf16(dq16, dk16, dv16, k.dqkv16, k.rope_cos,
                                                     k.rope_sin, B_, T_, NH, cfg_.num_kv_heads,
                                                     cfg_.head_dim(), doc_positions()));
  ZT_RETURN_IF_ERROR(
      o.rmsnorm_forward_bf16(n16, nullptr, x, p(block(l, s.input_norm)), BT, C, eps));
  ZT_RETURN_IF_ERROR(
      linear16_bwd(k.dln, block(l, s.q_weight), block_bias(l, s.q_bias), dq16, n16, C, C, false));
  ZT_RETURN_IF_ERROR(
      linear16_bwd(k.dln, block(l, s.k_weight), block_bias(l, s.k_bias), dk16, n16, C, KC, true));
  ZT_RETURN_IF_ERROR(
      linear16_bwd(k.dln, block(l, s.v_weight), block_bias(l, s.v_bias), dv16, n16, C, KC, true));
  return o.rmsnorm_backward(k.dres, grad_or_sink(block(l, s.input_norm)), k.dln, x,
                            p(block(l, s.input_norm)), a.rstd1, BT, C);
}

// The lm head on bf16 operands (every bf16_compute run): the head weight
// as bf16 once for the pass, each chunk's lnf rounded once for both GEMMs,
// its dlogits written rounded by the cross-entropy; logits and d lnf fp32.
Status LlamaModel::forward_head_bf16(int64_t chunk) {
  const int64_t C = cfg_.hidden_size, Vp = cfg_.padded_vocab, V = cfg_.vocab_size, BT = B_ * T_;
  const device::Ops& o = ops();
  ZT_ASSIGN_OR_RETURN(const BFloat16* w16, weight_bf16(head_weight()));
  BFloat16* dlogits16 = d16_.as<BFloat16>();
  for (int64_t r0 = 0; r0 < BT; r0 += chunk) {
    const int64_t rows = std::min(chunk, BT - r0);
    ZT_ASSIGN_OR_RETURN(const BFloat16* lnf16, rounded(acts_.lnf + r0 * C, rows * C, x16_));
    ZT_RETURN_IF_ERROR(o.linear_forward_bf16(acts_.logits, lnf16, w16, nullptr, 1, rows, C, Vp));
    if (!has_targets_) continue;
    const int32_t* targets = acts_.targets + r0;
    float* losses = acts_.losses + r0;
    if (!for_backward_) {
      ZT_RETURN_IF_ERROR(
          o.crossentropy_forward(losses, nullptr, acts_.logits, targets, 1, rows, V, Vp));
      continue;
    }
    ZT_RETURN_IF_ERROR(o.crossentropy_forward_backward_bf16(losses, dlogits16, acts_.logits,
                                                            targets, unit_dloss_, 1, rows, V, Vp));
    float* dln = acts_.dln + r0 * C;
    if (frozen(head_weight())) {  // LoRA: no weight gradient
      ZT_RETURN_IF_ERROR(frozen_linear_backward_bf16(dln, dlogits16, w16, rows, C, Vp, false));
      continue;
    }
    ZT_RETURN_IF_ERROR(o.linear_backward_bf16(dln, acts_.dhead, nullptr, dlogits16, lnf16, w16, 1,
                                              rows, C, Vp, false));
  }
  return ok_status();
}

}  // namespace zerotrain::model::llama
