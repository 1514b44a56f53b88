// GptModel's linear layers: the fp32 kernels, or with bf16_compute the bf16
// kernels on operands in the model's bf16 scratch (rounded from fp32 here
// unless a kernel wrote them in bf16 already); the kernels that write a
// GEMM's operand (layernorm, gelu) and the attention, for either path.
#include <algorithm>
#include <cstring>

#include "device/cpu/kernels/ops.h"
#include "model/gpt_model.h"

namespace zerotrain::model {

namespace kc = zerotrain::device::cpu;

namespace {

// fn(begin, count) over [0, n) in 64 Ki-element blocks, in parallel: a
// block's conversions stay in cache.
template <typename Fn>
void for_blocks(int64_t n, Fn&& fn) {
  constexpr int64_t kBlock = 1 << 16;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i += kBlock) fn(i, std::min(kBlock, n - i));
}

// dst = bf16(src), round to nearest even.
const BFloat16* to_bf16(device::cpu::AlignedBuffer<BFloat16>& dst, const float* src,
                            int64_t n) {
  ZT_CHECK(static_cast<size_t>(n) <= dst.size(), "bf16 scratch too small: ", n, " > ", dst.size());
  // BFloat16 is a standard-layout wrapper of its uint16_t bits.
  auto* out = reinterpret_cast<BFloat16*>(dst.data());
  for_blocks(n, [&](int64_t i, int64_t len) { kc::bf16_from_float_array(out + i, src + i, len); });
  return out;
}

}  // namespace

const BFloat16* GptModel::as_bf16(Operand x, device::cpu::AlignedBuffer<BFloat16>& scratch,
                                      int64_t n) {
  return x.bf16 != nullptr ? x.bf16 : to_bf16(scratch, x.f32, n);
}

const float* GptModel::as_f32(Operand x) {
  ZT_CHECK(x.f32 != nullptr, "a bf16 operand on the fp32 path");
  return x.f32;
}

float* GptModel::as_f32(Output x) {
  ZT_CHECK(x.f32 != nullptr, "a bf16 output on the fp32 path");
  return x.f32;
}

const BFloat16* GptModel::weight_bf16(const TensorInfo& t) {
  if (const BFloat16* view = param16_base_[t.group]) {
    return view + (t.offset - layout_.groups()[t.group].offset);
  }
  return to_bf16(w16_, p(t), t.numel);
}

Status GptModel::linear_fwd(Output out, Operand inp, const TensorInfo& w, const float* b, int64_t C,
                            int64_t OC) {
  if (!options_.bf16_compute)
    return kc::linear_forward(as_f32(out), as_f32(inp), p(w), b, B_, T_, C, OC);
  const BFloat16* w16 = weight_bf16(w);
  const BFloat16* x16 = as_bf16(inp, x16_, B_ * T_ * C);
  if (out.bf16 != nullptr) return kc::linear_forward_bf16(out.bf16, x16, w16, b, B_, T_, C, OC);
  return kc::linear_forward_bf16(out.f32, x16, w16, b, B_, T_, C, OC);
}

Status GptModel::linear_bwd(Output dinp, float* dw, float* db, Operand dout, Operand inp,
                            const TensorInfo& w, int64_t C, int64_t OC, bool dinp_accumulate) {
  if (!options_.bf16_compute) {
    return kc::linear_backward(as_f32(dinp), dw, db, as_f32(dout), as_f32(inp), p(w), B_, T_, C, OC,
                               dinp_accumulate);
  }
  const BFloat16* w16 = weight_bf16(w);
  const BFloat16* x16 = as_bf16(inp, x16_, B_ * T_ * C);
  const BFloat16* d16 = as_bf16(dout, d16_, B_ * T_ * OC);
  if (dinp.bf16 != nullptr) {
    ZT_CHECK(!dinp_accumulate, "a bf16 input gradient is overwritten, not accumulated");
    return kc::linear_backward_bf16(dinp.bf16, dw, db, d16, x16, w16, B_, T_, C, OC);
  }
  return kc::linear_backward_bf16(dinp.f32, dw, db, d16, x16, w16, B_, T_, C, OC, dinp_accumulate);
}

GptModel::Operand GptModel::layernorm_operand(const float* x, float* mean, float* rstd,
                                              const float* w, const float* b) {
  if (!options_.bf16_compute) {
    kc::layernorm_forward(acts_.ln, mean, rstd, x, w, b, B_, T_, cfg_.n_embd);
    return acts_.ln;
  }
  kc::layernorm_forward_bf16(x16(), mean, rstd, x, w, b, B_, T_, cfg_.n_embd);
  return x16();
}

GptModel::Operand GptModel::attention_operand(const LayerActivations& a) {
  if (!options_.bf16_compute) return a.atty;
  return a.atty16;
}

GptModel::Output GptModel::attention_input_gradient() {
  if (!options_.bf16_compute) return acts_.datty;
  return x16();  // read by attention_bwd; c_attn's ln_1 recompute reuses it after
}

Status GptModel::attention_fwd(const LayerActivations& a) {
  const int64_t B = B_, T = T_, C = cfg_.n_embd, NH = cfg_.n_head;
  const bool lse = options_.recompute_attention;
  if (!options_.bf16_compute) {
    return lse ? kc::attention_forward_lse(a.atty, a.att, a.qkv, B, T, C, NH)
               : kc::attention_forward(a.atty, a.att, a.qkv, B, T, C, NH);
  }
  // Autocast's qkv (the c_attn GEMM wrote it rounded); the output is
  // rounded into the saved atty16, c_proj's operand.
  return kc::attention_forward_bf16(a.atty16, lse ? nullptr : a.att, lse ? a.att : nullptr, a.qkv16,
                                    B, T, C, NH);
}

Status GptModel::attention_bwd(const LayerActivations& a) {
  const int64_t B = B_, T = T_, C = cfg_.n_embd, NH = cfg_.n_head;
  const bool lse = options_.recompute_attention;
  Activations& s = acts_;
  if (!options_.bf16_compute) {
    std::memset(s.dqkv, 0, static_cast<size_t>(B * T * 3 * C) * sizeof(float));  // it adds
    return lse ? kc::attention_backward_lse(s.dqkv, s.datty, a.qkv, a.att, B, T, C, NH)
               : kc::attention_backward(s.dqkv, s.datty, a.qkv, a.att, B, T, C, NH);
  }
  // d atty in x16 (attention_input_gradient); d qkv overwritten into d16.
  return kc::attention_backward_bf16(d16(), x16(), a.qkv16, lse ? nullptr : a.att,
                                     lse ? a.att : nullptr, B, T, C, NH);
}

GptModel::Operand GptModel::qkv_gradient() {
  if (!options_.bf16_compute) return acts_.dqkv;
  return d16();
}

GptModel::Operand GptModel::gelu_backward_operand(const LayerActivations& a) {
  const int64_t n = B_ * T_ * 4 * cfg_.n_embd;
  if (!options_.bf16_compute) {
    float* dfch = acts_.fch_gelu;  // gelu(fch) is used up: its scratch takes d fch
    kc::gelu_backward(dfch, a.fch, acts_.dfch_gelu, n, /*accumulate=*/false);
    return dfch;
  }
  kc::gelu_backward_bf16(d16(), a.fch16, acts_.dfch_gelu, n);
  return d16();
}

GptModel::Operand GptModel::gelu_operand(const LayerActivations& a) {
  const int64_t n = B_ * T_ * 4 * cfg_.n_embd;
  if (!options_.bf16_compute) {
    kc::gelu_forward(acts_.fch_gelu, a.fch, n);
    return acts_.fch_gelu;
  }
  kc::gelu_forward_bf16(x16(), a.fch16, n);  // at autocast's fch, as the c_fc GEMM rounded it
  return x16();
}

void GptModel::prepare_head() {
  if (options_.bf16_compute) head_w16_ = weight_bf16(layout_.wte());
}

GptModel::Operand GptModel::head_operand(const float* lnf, int64_t rows) {
  if (!options_.bf16_compute) return lnf;
  return as_bf16(lnf, x16_, rows * cfg_.n_embd);
}

Status GptModel::head_fwd(float* logits, Operand lnf, int64_t rows) {
  const int64_t C = cfg_.n_embd, Vp = cfg_.padded_vocab;
  if (!options_.bf16_compute) {
    return kc::linear_forward(logits, as_f32(lnf), p(layout_.wte()), nullptr, 1, rows, C, Vp);
  }
  return kc::linear_forward_bf16(logits, as_bf16(lnf, x16_, rows * C), head_w16_, nullptr, 1, rows,
                                 C, Vp);
}

Status GptModel::head_bwd(float* dln, float* dwte, Operand dlogits, Operand lnf, int64_t rows) {
  const int64_t C = cfg_.n_embd, Vp = cfg_.padded_vocab;
  if (!options_.bf16_compute) {
    return kc::linear_backward(dln, dwte, nullptr, as_f32(dlogits), as_f32(lnf), p(layout_.wte()),
                               1, rows, C, Vp);
  }
  return kc::linear_backward_bf16(dln, dwte, nullptr, as_bf16(dlogits, d16_, rows * Vp),
                                  as_bf16(lnf, x16_, rows * C), head_w16_, 1, rows, C, Vp);
}

}  // namespace zerotrain::model
