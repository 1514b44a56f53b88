// GPT-2's KV-cached decoder (model/decoder.h): the forward of gpt_forward.cc
// over n new tokens a row at positions [pos, pos+n), in fp32, with the
// attention over the layer's cache (Ops::attention_decode) and the tied head
// over each row's last token only.
#include <algorithm>

#include "device/ops.h"
#include "model/decoder.h"
#include "model/gpt2/gpt_model.h"

namespace zerotrain::model::gpt2 {

class GptDecoder : public Decoder {
 public:
  GptDecoder(const GptModel& m, int64_t B, int64_t Tmax, int64_t chunk)
      : Decoder(m.device(), B, Tmax, chunk, m.cfg_.vocab_size, m.cfg_.padded_vocab), m_(m) {}

  Status allocate() {
    ZT_RETURN_IF_ERROR(allocate_io());
    const int64_t C = m_.cfg_.n_embd, rows = B_ * max_chunk_;
    const auto floats = [](int64_t n) { return static_cast<size_t>(n) * sizeof(float); };
    ZT_ASSIGN_OR_RETURN(
        cache_, device_.allocate(floats(2 * m_.cfg_.n_layer * B_ * Tmax_ * C),
                                 device::MemoryCategory::kActivations, "generation KV cache"));
    ZT_ASSIGN_OR_RETURN(
        scratch_, device_.allocate(floats(rows * (4 * C + 3 * C + 8 * C)),
                                   device::MemoryCategory::kActivations, "generation activations"));
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
  const GptModel& m_;
  device::Buffer cache_, scratch_;  // [L][K,V][B,NH,Tmax,HD]; the step's activations
};

StatusOr<std::unique_ptr<Decoder>> GptModel::make_decoder(int64_t batch, int64_t max_seq) const {
  if (adapters() != nullptr)
    return invalid_argument("generate: merge the LoRA adapter into the base first (--adapter)");
  if (batch < 1 || max_seq < 1 || max_seq > cfg_.seq_len) {
    return invalid_argument("generate: " + std::to_string(max_seq) + " positions; gpt2 has " +
                            std::to_string(cfg_.seq_len) + " (n_positions)");
  }
  ZT_RETURN_IF_ERROR(check_parameters_bound("generate"));
  auto d = std::make_unique<GptDecoder>(*this, batch, max_seq, std::min<int64_t>(max_seq, 256));
  ZT_RETURN_IF_ERROR(d->allocate());
  return std::unique_ptr<Decoder>(std::move(d));
}

}  // namespace zerotrain::model::gpt2
