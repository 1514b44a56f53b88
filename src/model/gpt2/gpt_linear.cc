// GptModel's linear layers: the fp32 ops, or with bf16_compute the bf16
// ops on operands in the model's bf16 scratch (rounded from fp32 here
// unless an op wrote them in bf16 already); the ops that write a GEMM's
// operand (layernorm, gelu) and the attention, for either path.
#include "device/ops.h"
#include "model/gpt2/gpt_model.h"

namespace zerotrain::model::gpt2 {

namespace {

Tensor f32(const float* p, int64_t n, device::Device* d) {
  return {const_cast<float*>(p), DType::kFloat32, static_cast<size_t>(n), d};
}
Tensor b16(BFloat16* p, int64_t n, device::Device* d) {
  return {p, DType::kBFloat16, static_cast<size_t>(n), d};
}

}  // namespace

StatusOr<const BFloat16*> GptModel::as_bf16(Operand x, const device::Buffer& scratch, int64_t n) {
  if (x.bf16 != nullptr) return x.bf16;
  ZT_CHECK(static_cast<size_t>(n) * 2 <= scratch.bytes(), "bf16 scratch too small: ", n, " > ",
           scratch.bytes() / 2);
  ZT_RETURN_IF_ERROR(
      ops().convert(f32(x.f32, n, &device()), b16(scratch.as<BFloat16>(), n, &device())));
  return scratch.as<BFloat16>();
}

const float* GptModel::as_f32(Operand x) {
  ZT_CHECK(x.f32 != nullptr, "a bf16 operand on the fp32 path");
  return x.f32;
}

float* GptModel::as_f32(Output x) {
  ZT_CHECK(x.f32 != nullptr, "a bf16 output on the fp32 path");
  return x.f32;
}

StatusOr<const BFloat16*> GptModel::weight_bf16(const TensorInfo& t) {
  if (const BFloat16* view = group_parameters_bf16(t.group)) {
    return view + (t.offset - layout().groups()[t.group].offset);
  }
  return as_bf16(p(t), w16_, t.numel);
}

Status GptModel::linear_fwd(Output out, Operand inp, const TensorInfo& w, const float* b, int64_t C,
                            int64_t OC) {
  if (!bf16_compute()) {  // LoRA runs here only (create refuses bf16 with adapters)
    ZT_RETURN_IF_ERROR(ops().linear_forward(as_f32(out), as_f32(inp), p(w), b, B_, T_, C, OC));
    return lora_forward(as_f32(out), as_f32(inp), w, B_ * T_);
  }
  ZT_ASSIGN_OR_RETURN(const BFloat16* w16, weight_bf16(w));
  ZT_ASSIGN_OR_RETURN(const BFloat16* x16, as_bf16(inp, x16_, B_ * T_ * C));
  if (out.bf16 != nullptr) return ops().linear_forward_bf16(out.bf16, x16, w16, b, B_, T_, C, OC);
  return ops().linear_forward_bf16(out.f32, x16, w16, b, B_, T_, C, OC);
}

Status GptModel::linear_bwd(Output dinp, float* dw, float* db, Operand dout, Operand inp,
                            const TensorInfo& w, int64_t C, int64_t OC, bool dinp_accumulate) {
  if (!bf16_compute()) {
    if (frozen(w)) {  // LoRA: the input gradient, then the adapter's
      ZT_RETURN_IF_ERROR(frozen_linear_backward(as_f32(dinp), as_f32(dout), p(w), B_ * T_, C, OC,
                                                dinp_accumulate));
      return lora_backward(as_f32(dinp), as_f32(dout), as_f32(inp), w, B_ * T_);
    }
    return ops().linear_backward(as_f32(dinp), dw, db, as_f32(dout), as_f32(inp), p(w), B_, T_, C,
                                 OC, dinp_accumulate);
  }
  ZT_ASSIGN_OR_RETURN(const BFloat16* w16, weight_bf16(w));
  ZT_ASSIGN_OR_RETURN(const BFloat16* x16, as_bf16(inp, x16_, B_ * T_ * C));
  ZT_ASSIGN_OR_RETURN(const BFloat16* d16, as_bf16(dout, d16_, B_ * T_ * OC));
  if (dinp.bf16 != nullptr) {
    ZT_CHECK(!dinp_accumulate, "a bf16 input gradient is overwritten, not accumulated");
    return ops().linear_backward_bf16(dinp.bf16, dw, db, d16, x16, w16, B_, T_, C, OC);
  }
  return ops().linear_backward_bf16(dinp.f32, dw, db, d16, x16, w16, B_, T_, C, OC,
                                    dinp_accumulate);
}

StatusOr<GptModel::Operand> GptModel::layernorm_operand(const float* x, float* mean, float* rstd,
                                                        const float* w, const float* b) {
  if (!bf16_compute()) {
    ZT_RETURN_IF_ERROR(ops().layernorm_forward(acts_.ln, mean, rstd, x, w, b, B_, T_, cfg_.n_embd));
    return Operand(acts_.ln);
  }
  ZT_RETURN_IF_ERROR(ops().layernorm_forward_bf16(x16(), mean, rstd, x, w, b, B_, T_, cfg_.n_embd));
  return Operand(x16());
}

GptModel::Operand GptModel::attention_operand(const LayerActivations& a) {
  if (!bf16_compute()) return a.atty;
  return a.atty16;
}

GptModel::Output GptModel::attention_input_gradient() {
  if (!bf16_compute()) return acts_.datty;
  return x16();  // read by attention_bwd; c_attn's ln_1 recompute reuses it after
}

Status GptModel::attention_fwd(const LayerActivations& a) {
  const int64_t B = B_, T = T_, C = cfg_.n_embd, NH = cfg_.n_head;
  const bool lse = options().recompute_attention;
  if (!bf16_compute()) {
    return lse ? ops().attention_forward_lse(a.atty, a.att, a.qkv, B, T, C, NH, doc_first_key())
               : ops().attention_forward(a.atty, a.att, a.qkv, B, T, C, NH);
  }
  // Autocast's qkv (the c_attn GEMM wrote it rounded); the output is
  // rounded into the saved atty16, c_proj's operand.
  return ops().attention_forward_bf16(a.atty16, lse ? nullptr : a.att, lse ? a.att : nullptr,
                                      a.qkv16, B, T, C, NH);
}

Status GptModel::attention_bwd(const LayerActivations& a) {
  const int64_t B = B_, T = T_, C = cfg_.n_embd, NH = cfg_.n_head;
  const bool lse = options().recompute_attention;
  Activations& s = acts_;
  if (!bf16_compute()) {
    ZT_RETURN_IF_ERROR(zero(s.dqkv, B * T * 3 * C));  // it adds
    return lse ? ops().attention_backward_lse(s.dqkv, s.datty, a.qkv, a.att, B, T, C, NH,
                                              doc_first_key())
               : ops().attention_backward(s.dqkv, s.datty, a.qkv, a.att, B, T, C, NH);
  }
  // d atty in x16 (attention_input_gradient); d qkv overwritten into d16.
  return ops().attention_backward_bf16(d16(), x16(), a.qkv16, lse ? nullptr : a.att,
                                       lse ? a.att : nullptr, B, T, C, NH);
}

GptModel::Operand GptModel::qkv_gradient() {
  if (!bf16_compute()) return acts_.dqkv;
  return d16();
}

StatusOr<GptModel::Operand> GptModel::gelu_backward_operand(const LayerActivations& a) {
  const int64_t n = B_ * T_ * 4 * cfg_.n_embd;
  if (!bf16_compute()) {
    float* dfch = acts_.fch_gelu;  // gelu(fch) is used up: its scratch takes d fch
    ZT_RETURN_IF_ERROR(ops().gelu_backward(dfch, a.fch, acts_.dfch_gelu, n, /*accumulate=*/false));
    return Operand(dfch);
  }
  ZT_RETURN_IF_ERROR(ops().gelu_backward_bf16(d16(), a.fch16, acts_.dfch_gelu, n));
  return Operand(d16());
}

StatusOr<GptModel::Operand> GptModel::gelu_operand(const LayerActivations& a) {
  const int64_t n = B_ * T_ * 4 * cfg_.n_embd;
  if (!bf16_compute()) {
    ZT_RETURN_IF_ERROR(ops().gelu_forward(acts_.fch_gelu, a.fch, n));
    return Operand(acts_.fch_gelu);
  }
  // At autocast's fch, as the c_fc GEMM rounded it.
  ZT_RETURN_IF_ERROR(ops().gelu_forward_bf16(x16(), a.fch16, n));
  return Operand(x16());
}

Status GptModel::prepare_head() {
  if (!bf16_compute()) return ok_status();
  ZT_ASSIGN_OR_RETURN(head_w16_, weight_bf16(wte(base_layout())));
  return ok_status();
}

StatusOr<GptModel::Operand> GptModel::head_operand(const float* lnf, int64_t rows) {
  if (!bf16_compute()) return Operand(lnf);
  ZT_ASSIGN_OR_RETURN(const BFloat16* x, as_bf16(lnf, x16_, rows * cfg_.n_embd));
  return Operand(x);
}

Status GptModel::head_fwd(float* logits, Operand lnf, int64_t rows) {
  const int64_t C = cfg_.n_embd, Vp = cfg_.padded_vocab;
  if (!bf16_compute()) {
    return ops().linear_forward(logits, as_f32(lnf), p(wte(base_layout())), nullptr, 1, rows, C, Vp);
  }
  ZT_ASSIGN_OR_RETURN(const BFloat16* x, as_bf16(lnf, x16_, rows * C));
  return ops().linear_forward_bf16(logits, x, head_w16_, nullptr, 1, rows, C, Vp);
}

Status GptModel::head_bwd(float* dln, float* dwte, Operand dlogits, Operand lnf, int64_t rows) {
  const int64_t C = cfg_.n_embd, Vp = cfg_.padded_vocab;
  if (!bf16_compute()) {
    if (frozen(wte(base_layout())))  // LoRA
      return frozen_linear_backward(dln, as_f32(dlogits), p(wte(base_layout())), rows, C, Vp,
                                    /*accumulate=*/true);
    return ops().linear_backward(dln, dwte, nullptr, as_f32(dlogits), as_f32(lnf),
                                 p(wte(base_layout())), 1, rows, C, Vp, /*dinp_accumulate=*/true);
  }
  ZT_ASSIGN_OR_RETURN(const BFloat16* d, as_bf16(dlogits, d16_, rows * Vp));
  ZT_ASSIGN_OR_RETURN(const BFloat16* x, as_bf16(lnf, x16_, rows * C));
  return ops().linear_backward_bf16(dln, dwte, nullptr, d, x, head_w16_, 1, rows, C, Vp,
                                    /*dinp_accumulate=*/true);
}

}  // namespace zerotrain::model::gpt2
