// GPT-2's KV-cached decoder (model/decoder.h): the forward of gpt_forward.cc
// over n new tokens a row at positions [pos, pos+n), with the attention over
// the layer's cache (Ops::attention_decode) and the tied head over each
// row's last token only. In fp32, or in bf16 at the bf16_compute forward's
// rounding points (gpt_linear.cc: the GEMM operands and c_attn's and c_fc's
// outputs bf16, a bf16 cache; the residual stream and logits fp32).
#include <algorithm>

#include "device/ops.h"
#include "model/decoder.h"
#include "model/gpt2/gpt_model.h"

namespace zerotrain::model::gpt2 {

class GptDecoder : public Decoder {
 public:
  GptDecoder(const GptModel& m, int64_t B, int64_t Tmax, int64_t chunk, DType dtype)
      : Decoder(m.device(), B, Tmax, chunk, m.cfg_.vocab_size, m.cfg_.padded_vocab, dtype),
        m_(m) {}

  Status allocate() {
    ZT_RETURN_IF_ERROR(allocate_io(&m_));
    const int64_t C = m_.cfg_.n_embd, rows = B_ * max_chunk_;
    const size_t elem = dtype_size(dtype_);
    ZT_ASSIGN_OR_RETURN(
        cache_, device_.allocate(elem * static_cast<size_t>(2 * m_.cfg_.n_layer * B_ * Tmax_ * C),
                                 device::MemoryCategory::kActivations, "generation KV cache"));
    // fp32: x, ln, att, proj, qkv, fch, act; bf16: x and proj fp32, the
    // GEMM operands and outputs (ln, att, qkv, fch, act) bf16.
    const bool f32 = dtype_ == DType::kFloat32;
    const int64_t fp32_rows = f32 ? 4 * C + 3 * C + 8 * C : 2 * C;
    const int64_t bf16_rows = f32 ? 0 : 2 * C + 3 * C + 8 * C;
    ZT_ASSIGN_OR_RETURN(
        scratch_, device_.allocate(static_cast<size_t>(rows * fp32_rows) * sizeof(float) +
                                       static_cast<size_t>(rows * bf16_rows) * sizeof(BFloat16),
                                   device::MemoryCategory::kActivations, "generation activations"));
    scratch16_ = reinterpret_cast<BFloat16*>(scratch_.as<float>() + rows * fp32_rows);
    return ok_status();
  }

 protected:
  Status forward(int64_t n, int64_t pos) override {
    const GptConfig& c = m_.cfg_;
    const int64_t C = c.n_embd, NH = c.n_head, HD = C / NH, BN = B_ * n;
    const device::Ops& o = device_.ops();
    const ParamLayout& lay = m_.layout();
    float* x = scratch_.as<float>();  // residual stream [BN, C]
    float* ln = x + BN * C;           // [BN, C]
    float* att = ln + BN * C;         // [BN, C]
    float* proj = att + BN * C;       // [BN, C]
    float* qkv = proj + BN * C;       // [BN, 3C]
    float* fch = qkv + BN * 3 * C;    // [BN, 4C]
    float* act = fch + BN * 4 * C;    // [BN, 4C]
    // Positions pos.. are rows pos.. of wpe; a left-padded row's count from
    // its start (its pads take row 0: nothing attends to them).
    if (row_first() == nullptr) {
      ZT_RETURN_IF_ERROR(o.encoder_forward(x, tokens_.as<int32_t>(), m_.p(wte(lay)),
                                           m_.p(wpe(lay)) + pos * C, B_, n, C, c.vocab_size));
    } else {
      for (int64_t b = 0; b < B_; ++b) {
        const int64_t pads = std::clamp<int64_t>(row_start(b) - pos, 0, n);
        const int32_t* tokens = tokens_.as<int32_t>() + b * n;
        float* row = x + b * n * C;
        if (pads > 0)
          ZT_RETURN_IF_ERROR(o.encoder_forward(row, tokens, m_.p(wte(lay)), m_.p(wpe(lay)), 1, pads,
                                               C, c.vocab_size));
        if (pads < n)
          ZT_RETURN_IF_ERROR(o.encoder_forward(row + pads * C, tokens + pads, m_.p(wte(lay)),
                                               m_.p(wpe(lay)) + (pos + pads - row_start(b)) * C, 1,
                                               n - pads, C, c.vocab_size));
      }
    }
    if (dtype_ == DType::kBFloat16) return blocks_and_head_bf16(n, pos);
    for (int64_t l = 0; l < c.n_layer; ++l) {
      auto w = [&](int slot) { return m_.p(block_tensor(lay, l, slot)); };
      float* kc = cache_.as<float>() + 2 * l * B_ * Tmax_ * C;
      float* vc = kc + B_ * Tmax_ * C;
      ZT_RETURN_IF_ERROR(
          o.layernorm_forward(ln, nullptr, nullptr, x, w(kLn1Weight), w(kLn1Bias), B_, n, C));
      ZT_RETURN_IF_ERROR(o.linear_forward(qkv, ln, w(kAttnWeight), w(kAttnBias), B_, n, C, 3 * C));
      ZT_RETURN_IF_ERROR(
          o.attention_decode(att, qkv, kc, vc, B_, n, pos, Tmax_, NH, NH, HD, 0, row_first()));
      ZT_RETURN_IF_ERROR(
          o.linear_forward(proj, att, w(kAttnProjWeight), w(kAttnProjBias), B_, n, C, C));
      ZT_RETURN_IF_ERROR(o.residual_forward(x, x, proj, BN * C));
      ZT_RETURN_IF_ERROR(
          o.layernorm_forward(ln, nullptr, nullptr, x, w(kLn2Weight), w(kLn2Bias), B_, n, C));
      ZT_RETURN_IF_ERROR(o.linear_forward(fch, ln, w(kFcWeight), w(kFcBias), B_, n, C, 4 * C));
      ZT_RETURN_IF_ERROR(o.gelu_forward(act, fch, BN * 4 * C));
      ZT_RETURN_IF_ERROR(
          o.linear_forward(proj, act, w(kFcProjWeight), w(kFcProjBias), B_, n, 4 * C, C));
      ZT_RETURN_IF_ERROR(o.residual_forward(x, x, proj, BN * C));
    }
    // Each row's last position, through ln_f and the tied head.
    for (int64_t b = 0; b < B_; ++b) {
      ZT_RETURN_IF_ERROR(device_.copy(att + b * C, x + (b * n + n - 1) * C, C * sizeof(float)));
    }
    ZT_RETURN_IF_ERROR(o.layernorm_forward(ln, nullptr, nullptr, att, m_.p(lnf_weight(lay)),
                                           m_.p(lnf_bias(lay)), B_, 1, C));
    return o.linear_forward(logits_.as<float>(), ln, m_.p(wte(lay)), nullptr, B_, 1, C,
                            c.padded_vocab);
  }

 private:
  // The bf16 blocks and head (the embedding is fp32 in x already).
  Status blocks_and_head_bf16(int64_t n, int64_t pos) {
    const GptConfig& c = m_.cfg_;
    const int64_t C = c.n_embd, NH = c.n_head, HD = C / NH, BN = B_ * n;
    const device::Ops& o = device_.ops();
    const ParamLayout& lay = m_.layout();
    float* x = scratch_.as<float>();  // fp32 [BN, C]
    float* proj = x + BN * C;         // fp32 [BN, C]
    BFloat16* ln = scratch16_;        // [BN, C]
    BFloat16* att = ln + BN * C;      // [BN, C]
    BFloat16* qkv = att + BN * C;     // [BN, 3C]
    BFloat16* fch = qkv + BN * 3 * C;  // [BN, 4C]
    BFloat16* act = fch + BN * 4 * C;  // [BN, 4C]
    for (int64_t l = 0; l < c.n_layer; ++l) {
      auto w = [&](int slot) { return m_.p(block_tensor(lay, l, slot)); };
      auto w16 = [&](int slot) { return this->w16(block_tensor(lay, l, slot)); };
      BFloat16* kc = cache_.as<BFloat16>() + 2 * l * B_ * Tmax_ * C;
      BFloat16* vc = kc + B_ * Tmax_ * C;
      ZT_RETURN_IF_ERROR(
          o.layernorm_forward_bf16(ln, nullptr, nullptr, x, w(kLn1Weight), w(kLn1Bias), B_, n, C));
      ZT_RETURN_IF_ERROR(
          o.linear_forward_bf16(qkv, ln, w16(kAttnWeight), w(kAttnBias), B_, n, C, 3 * C));
      ZT_RETURN_IF_ERROR(o.attention_decode_bf16(att, qkv, kc, vc, B_, n, pos, Tmax_, NH, NH, HD,
                                                 0, row_first()));
      ZT_RETURN_IF_ERROR(
          o.linear_forward_bf16(proj, att, w16(kAttnProjWeight), w(kAttnProjBias), B_, n, C, C));
      ZT_RETURN_IF_ERROR(o.residual_forward(x, x, proj, BN * C));
      ZT_RETURN_IF_ERROR(
          o.layernorm_forward_bf16(ln, nullptr, nullptr, x, w(kLn2Weight), w(kLn2Bias), B_, n, C));
      ZT_RETURN_IF_ERROR(
          o.linear_forward_bf16(fch, ln, w16(kFcWeight), w(kFcBias), B_, n, C, 4 * C));
      ZT_RETURN_IF_ERROR(o.gelu_forward_bf16(act, fch, BN * 4 * C));
      ZT_RETURN_IF_ERROR(o.linear_forward_bf16(proj, act, w16(kFcProjWeight), w(kFcProjBias), B_,
                                               n, 4 * C, C));
      ZT_RETURN_IF_ERROR(o.residual_forward(x, x, proj, BN * C));
    }
    for (int64_t b = 0; b < B_; ++b) {
      ZT_RETURN_IF_ERROR(device_.copy(proj + b * C, x + (b * n + n - 1) * C, C * sizeof(float)));
    }
    ZT_RETURN_IF_ERROR(o.layernorm_forward_bf16(ln, nullptr, nullptr, proj, m_.p(lnf_weight(lay)),
                                                m_.p(lnf_bias(lay)), B_, 1, C));
    return o.linear_forward_bf16(logits_.as<float>(), ln, w16(wte(lay)), nullptr, B_, 1, C,
                                 c.padded_vocab);
  }

  const GptModel& m_;
  // [L][K,V][B,NH,Tmax,HD] in dtype_; the step's activations (fp32, then bf16).
  device::Buffer cache_, scratch_;
  BFloat16* scratch16_ = nullptr;
};

StatusOr<std::unique_ptr<Decoder>> GptModel::make_decoder(int64_t batch, int64_t max_seq,
                                                          DType dtype) const {
  if (adapters() != nullptr)
    return invalid_argument("generate: merge the LoRA adapter into the base first (--adapter)");
  if (batch < 1 || max_seq < 1 || max_seq > cfg_.seq_len) {
    return invalid_argument("generate: " + std::to_string(max_seq) + " positions; gpt2 has " +
                            std::to_string(cfg_.seq_len) + " (n_positions)");
  }
  ZT_RETURN_IF_ERROR(check_parameters_bound("generate"));
  auto d = std::make_unique<GptDecoder>(*this, batch, max_seq, std::min<int64_t>(max_seq, 256),
                                        dtype);
  ZT_RETURN_IF_ERROR(d->allocate());
  return std::unique_ptr<Decoder>(std::move(d));
}

}  // namespace zerotrain::model::gpt2
