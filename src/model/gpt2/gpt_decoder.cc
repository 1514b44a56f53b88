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
      : Decoder(m.device(), B, Tmax, chunk, m.cfg_.vocab_size, m.cfg_.padded_vocab, dtype), m_(m) {}

  Status allocate() {
    ZT_RETURN_IF_ERROR(allocate_io(&m_));
    const int64_t C = m_.cfg_.n_embd, rows = B_ * max_chunk_;
    const size_t elem = dtype_size(dtype_);
    ZT_ASSIGN_OR_RETURN(
        cache_, device_.allocate(elem * static_cast<size_t>(2 * m_.cfg_.n_layer * B_ * Tmax_ * C),
                                 device::MemoryCategory::kActivations, "generation KV cache"));
    // fp32: the residual stream x and proj [rows, C]; then the GEMM
    // operands and outputs in dtype_: ln, att [rows, C], qkv [rows, 3C],
    // fch, act [rows, 4C].
    ZT_ASSIGN_OR_RETURN(
        scratch_, device_.allocate(static_cast<size_t>(rows * 2 * C) * sizeof(float) +
                                       elem * static_cast<size_t>(rows * 13 * C),
                                   device::MemoryCategory::kActivations, "generation activations"));
    operands_ = scratch_.as<float>() + rows * 2 * C;
    return ok_status();
  }

 protected:
  Status forward(int64_t n, int64_t pos) override {
    return dtype_ == DType::kFloat32 ? forward_as<float>(n, pos) : forward_as<BFloat16>(n, pos);
  }

 private:
  // The forward on T operands (fp32, or bf16 at the bf16_compute forward's
  // rounding points), then each row's last position through ln_f and the
  // tied head.
  template <typename T>
  Status forward_as(int64_t n, int64_t pos) {
    const GptConfig& c = m_.cfg_;
    const int64_t C = c.n_embd, BN = B_ * n;
    const ParamLayout& lay = m_.layout();
    const device::Ops& o = device_.ops();
    float* x = scratch_.as<float>();  // residual stream [BN, C]
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
    for (int64_t l = 0; l < c.n_layer; ++l) ZT_RETURN_IF_ERROR(block<T>(l, n, pos));
    float* last = x + BN * C;  // proj's rows
    for (int64_t b = 0; b < B_; ++b) {
      ZT_RETURN_IF_ERROR(device_.copy(last + b * C, x + (b * n + n - 1) * C, C * sizeof(float)));
    }
    T* ln = static_cast<T*>(operands_);
    ZT_RETURN_IF_ERROR(norm(ln, last, lnf_weight(lay), lnf_bias(lay), 1));
    return linear(logits_.as<float>(), ln, wte(lay), nullptr, 1, C, c.padded_vocab);
  }

  template <typename T>
  Status block(int64_t l, int64_t n, int64_t pos) {
    const GptConfig& c = m_.cfg_;
    const int64_t C = c.n_embd, NH = c.n_head, HD = C / NH, BN = B_ * n;
    const ParamLayout& lay = m_.layout();
    float* x = scratch_.as<float>();
    float* proj = x + BN * C;
    T* ln = static_cast<T*>(operands_);  // [BN, C]
    T* att = ln + BN * C;                // [BN, C]
    T* qkv = att + BN * C;               // [BN, 3C]
    T* fch = qkv + BN * 3 * C;           // [BN, 4C]
    T* act = fch + BN * 4 * C;           // [BN, 4C]
    T* kc = cache_.as<T>() + 2 * l * B_ * Tmax_ * C;
    T* vc = kc + B_ * Tmax_ * C;
    const auto t = [&](int slot) -> const TensorInfo& { return block_tensor(lay, l, slot); };
    const auto lin = [&](auto* out, const T* in, int w, int b, int64_t ic, int64_t oc) {
      return linear(out, in, t(w), m_.p(t(b)), n, ic, oc);
    };
    const device::Ops& o = device_.ops();
    ZT_RETURN_IF_ERROR(norm(ln, x, t(kLn1Weight), t(kLn1Bias), n));
    ZT_RETURN_IF_ERROR(lin(qkv, ln, kAttnWeight, kAttnBias, C, 3 * C));
    ZT_RETURN_IF_ERROR(attend(att, qkv, kc, vc, n, pos, NH, NH, HD, 0));
    ZT_RETURN_IF_ERROR(lin(proj, att, kAttnProjWeight, kAttnProjBias, C, C));
    ZT_RETURN_IF_ERROR(o.residual_forward(x, x, proj, BN * C));
    ZT_RETURN_IF_ERROR(norm(ln, x, t(kLn2Weight), t(kLn2Bias), n));
    ZT_RETURN_IF_ERROR(lin(fch, ln, kFcWeight, kFcBias, C, 4 * C));
    ZT_RETURN_IF_ERROR(gelu(act, fch, BN * 4 * C));
    ZT_RETURN_IF_ERROR(lin(proj, act, kFcProjWeight, kFcProjBias, 4 * C, C));
    return o.residual_forward(x, x, proj, BN * C);
  }

  // The family's ops on T operands: LayerNorm of fp32 rows [B, T] into T, GELU.
  Status norm(float* out, const float* x, const TensorInfo& w, const TensorInfo& b,
              int64_t T) const {
    return device_.ops().layernorm_forward(out, nullptr, nullptr, x, m_.p(w), m_.p(b), B_, T,
                                           m_.cfg_.n_embd);
  }
  Status norm(BFloat16* out, const float* x, const TensorInfo& w, const TensorInfo& b,
              int64_t T) const {
    return device_.ops().layernorm_forward_bf16(out, nullptr, nullptr, x, m_.p(w), m_.p(b), B_, T,
                                                m_.cfg_.n_embd);
  }
  Status gelu(float* out, const float* in, int64_t N) const {
    return device_.ops().gelu_forward(out, in, N);
  }
  Status gelu(BFloat16* out, const BFloat16* in, int64_t N) const {
    return device_.ops().gelu_forward_bf16(out, in, N);
  }

  const GptModel& m_;
  // [L][K,V][B,NH,Tmax,HD] in dtype_; the step's activations (fp32, then
  // the operands in dtype_ from operands_).
  device::Buffer cache_, scratch_;
  void* operands_ = nullptr;
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
  auto d =
      std::make_unique<GptDecoder>(*this, batch, max_seq, std::min<int64_t>(max_seq, 256), dtype);
  ZT_RETURN_IF_ERROR(d->allocate());
  return std::unique_ptr<Decoder>(std::move(d));
}

}  // namespace zerotrain::model::gpt2
