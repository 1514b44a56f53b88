// LlamaModel stages, forward and backward (see llama_model.h). acts_.dres
// carries d loss / d (residual stream) from stage to stage; kernel
// backwards ADD, so scratch they add into is zeroed first, while
// parameter gradients accumulate across backward() calls.
#include <algorithm>

#include "device/ops.h"
#include "model/llama/llama_model.h"

namespace zerotrain::model::llama {

Status LlamaModel::forward_embed() {
  return ops().encoder_forward(acts_.encoded, acts_.tokens, p(base_layout().tensors().front()),
                               nullptr,
                               B_, T_, cfg_.hidden_size, cfg_.vocab_size);
}

Status LlamaModel::backward_embed() {
  const TensorInfo& embed = base_layout().tensors().front();
  if (frozen(embed)) return ok_status();  // LoRA
  return ops().encoder_backward(g(embed), nullptr, acts_.dres, acts_.tokens, B_, T_,
                                cfg_.hidden_size);
}

Status LlamaModel::forward_block(int64_t l) {
  const int64_t BT = B_ * T_, C = cfg_.hidden_size, KC = cfg_.kv_dim(), I = cfg_.intermediate_size,
                NH = cfg_.num_heads;
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  const LayerActivations& a = acts_.layers[static_cast<size_t>(l)];
  const BlockSlots& s = slots_;
  const float* x = input_of(l);
  Activations& k = acts_;  // scratch
  const device::Ops& o = ops();

  // Attention: res2 = x + o_proj(attn(rope(q, k), v)), q/k/v of input_layernorm(x).
  ZT_RETURN_IF_ERROR(o.rmsnorm_forward(k.ln, a.rstd1, x, p(block(l, s.input_norm)), BT, C, eps));
  ZT_RETURN_IF_ERROR(linear_fwd(a.q, k.ln, block(l, s.q_weight), block_bias(l, s.q_bias), C, C));
  ZT_RETURN_IF_ERROR(linear_fwd(a.k, k.ln, block(l, s.k_weight), block_bias(l, s.k_bias), C, KC));
  ZT_RETURN_IF_ERROR(linear_fwd(a.v, k.ln, block(l, s.v_weight), block_bias(l, s.v_bias), C, KC));
  ZT_RETURN_IF_ERROR(o.rope_pack_qkv(k.qkv, a.q, a.k, a.v, k.rope_cos, k.rope_sin, B_, T_, NH,
                                     cfg_.num_kv_heads, cfg_.head_dim(), doc_positions()));
  ZT_RETURN_IF_ERROR(o.attention_forward_lse(a.atty, a.lse, k.qkv, B_, T_, C, NH,
                                             attention_first_key(cfg_.windowed(l))));
  ZT_RETURN_IF_ERROR(
      linear_fwd(k.proj, a.atty, block(l, s.o_weight), block_bias(l, s.o_bias), C, C));
  ZT_RETURN_IF_ERROR(o.residual_forward(a.res2, x, k.proj, BT * C));

  // MLP: res3 = res2 + down(silu(gate(n))·up(n)), n = post_attention_layernorm(res2).
  ZT_RETURN_IF_ERROR(
      o.rmsnorm_forward(k.ln, a.rstd2, a.res2, p(block(l, s.post_norm)), BT, C, eps));
  ZT_RETURN_IF_ERROR(linear_fwd(a.gate, k.ln, block(l, s.gate), nullptr, C, I));
  ZT_RETURN_IF_ERROR(linear_fwd(a.up, k.ln, block(l, s.up), nullptr, C, I));
  ZT_RETURN_IF_ERROR(o.swiglu_forward(k.act, a.gate, a.up, BT * I));
  ZT_RETURN_IF_ERROR(linear_fwd(k.proj, k.act, block(l, s.down), nullptr, I, C));
  return o.residual_forward(a.res3, a.res2, k.proj, BT * C);
}

Status LlamaModel::backward_block(int64_t l) {
  const int64_t BT = B_ * T_, C = cfg_.hidden_size, KC = cfg_.kv_dim(), I = cfg_.intermediate_size,
                NH = cfg_.num_heads;
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  const LayerActivations& a = acts_.layers[static_cast<size_t>(l)];
  const BlockSlots& s = slots_;
  const float* x = input_of(l);
  Activations& k = acts_;
  const device::Ops& o = ops();

  // MLP; d res3 is in dres. silu(gate)·up and the norm are recomputed.
  ZT_RETURN_IF_ERROR(o.swiglu_forward(k.act, a.gate, a.up, BT * I));
  ZT_RETURN_IF_ERROR(linear_bwd(k.dact, block(l, s.down), nullptr, k.dres, k.act, I, C, false));
  ZT_RETURN_IF_ERROR(o.swiglu_backward(k.dgate, k.dup, k.dact, a.gate, a.up, BT * I));
  ZT_RETURN_IF_ERROR(
      o.rmsnorm_forward(k.ln, nullptr, a.res2, p(block(l, s.post_norm)), BT, C, eps));
  ZT_RETURN_IF_ERROR(linear_bwd(k.dln, block(l, s.gate), nullptr, k.dgate, k.ln, C, I, false));
  ZT_RETURN_IF_ERROR(linear_bwd(k.dln, block(l, s.up), nullptr, k.dup, k.ln, C, I, true));
  ZT_RETURN_IF_ERROR(o.rmsnorm_backward(k.dres, grad_or_sink(block(l, s.post_norm)), k.dln, a.res2,
                                        p(block(l, s.post_norm)), a.rstd2, BT, C));

  // Attention; dres now holds d res2.
  ZT_RETURN_IF_ERROR(linear_bwd(k.datty, block(l, s.o_weight), block_bias(l, s.o_bias), k.dres,
                                a.atty, C, C, false));
  ZT_RETURN_IF_ERROR(o.rope_pack_qkv(k.qkv, a.q, a.k, a.v, k.rope_cos, k.rope_sin, B_, T_, NH,
                                     cfg_.num_kv_heads, cfg_.head_dim(), doc_positions()));
  ZT_RETURN_IF_ERROR(zero(k.dqkv, BT * 3 * C));
  ZT_RETURN_IF_ERROR(
      o.attention_backward_lse(k.dqkv, k.datty, k.qkv, a.lse, B_, T_, C, NH,
                               attention_first_key(cfg_.windowed(l))));
  ZT_RETURN_IF_ERROR(o.rope_unpack_qkv_backward(k.dq, k.dk, k.dv, k.dqkv, k.rope_cos, k.rope_sin,
                                                B_, T_, NH, cfg_.num_kv_heads, cfg_.head_dim(),
                                                doc_positions()));
  ZT_RETURN_IF_ERROR(o.rmsnorm_forward(k.ln, nullptr, x, p(block(l, s.input_norm)), BT, C, eps));
  ZT_RETURN_IF_ERROR(
      linear_bwd(k.dln, block(l, s.q_weight), block_bias(l, s.q_bias), k.dq, k.ln, C, C, false));
  ZT_RETURN_IF_ERROR(
      linear_bwd(k.dln, block(l, s.k_weight), block_bias(l, s.k_bias), k.dk, k.ln, C, KC, true));
  ZT_RETURN_IF_ERROR(
      linear_bwd(k.dln, block(l, s.v_weight), block_bias(l, s.v_bias), k.dv, k.ln, C, KC, true));
  return o.rmsnorm_backward(k.dres, grad_or_sink(block(l, s.input_norm)), k.dln, x,
                            p(block(l, s.input_norm)), a.rstd1, BT, C);
}

Status LlamaModel::forward_head() {
  const int64_t C = cfg_.hidden_size, Vp = cfg_.padded_vocab, V = cfg_.vocab_size, BT = B_ * T_;
  const device::Ops& o = ops();
  const TensorInfo& norm = base_layout().group_tensor(num_groups() - 1, 0);
  ZT_RETURN_IF_ERROR(o.rmsnorm_forward(acts_.lnf, acts_.lnf_rstd, input_of(cfg_.num_layers),
                                       p(norm), BT, C, static_cast<float>(cfg_.rms_norm_eps)));
  // logits = lnf · Wᵀ over all Vp rows (padding rows are zero; the
  // cross-entropy ignores their columns), a chunk of rows at a time; for a
  // backward each chunk's dlogits (unit dloss) replace its logits and give
  // its d lnf and share of dW at once (backward_head scales by dloss).
  if (for_backward_) {
    ZT_RETURN_IF_ERROR(zero(acts_.dhead, Vp * C));
    ZT_RETURN_IF_ERROR(zero(acts_.dln, BT * C));
  }
  const int64_t chunk = has_targets_ ? acts_.head_rows : BT;
  if (bf16_compute()) return forward_head_bf16(chunk);
  for (int64_t r0 = 0; r0 < BT; r0 += chunk) {
    const int64_t rows = std::min(chunk, BT - r0);
    const float* lnf = acts_.lnf + r0 * C;
    ZT_RETURN_IF_ERROR(gemm_fwd(acts_.logits, lnf, head_weight(), nullptr, rows, C, Vp));
    if (!has_targets_) continue;
    const int32_t* targets = acts_.targets + r0;
    float* losses = acts_.losses + r0;
    if (!for_backward_) {
      ZT_RETURN_IF_ERROR(
          o.crossentropy_forward(losses, nullptr, acts_.logits, targets, 1, rows, V, Vp));
      continue;
    }
    ZT_RETURN_IF_ERROR(o.crossentropy_forward_backward(losses, acts_.logits, acts_.logits, targets,
                                                       unit_dloss_, 1, rows, V, Vp));
    float* dhead = frozen(head_weight()) ? nullptr : acts_.dhead;  // null: no weight gradient
    ZT_RETURN_IF_ERROR(gemm_bwd(acts_.dln + r0 * C, dhead, nullptr, acts_.logits, lnf,
                                head_weight(), rows, C, Vp, false));
  }
  return ok_status();
}

Status LlamaModel::backward_head() {
  const int64_t C = cfg_.hidden_size, Vp = cfg_.padded_vocab, BT = B_ * T_;
  const device::Ops& o = ops();
  const TensorInfo& norm = base_layout().group_tensor(num_groups() - 1, 0);
  if (!frozen(head_weight()))
    ZT_RETURN_IF_ERROR(o.axpy(g(head_weight()), dloss_, acts_.dhead, Vp * C));
  ZT_RETURN_IF_ERROR(
      o.scale(Tensor(acts_.dln, DType::kFloat32, static_cast<size_t>(BT * C), &device()), dloss_));
  ZT_RETURN_IF_ERROR(zero(acts_.dres, BT * C));
  return o.rmsnorm_backward(acts_.dres, grad_or_sink(norm), acts_.dln, input_of(cfg_.num_layers), p(norm),
                            acts_.lnf_rstd, BT, C);
}

}  // namespace zerotrain::model::llama
