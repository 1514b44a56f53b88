// The Llama family's KV-cached decoder (model/decoder.h): llama_stages.cc's
// forward over n new tokens a row at positions [pos, pos+n), in fp32:
// RoPE at those positions (rows pos.. of the tables), the cache keeping the
// NKV key/value heads (grouped-query attention reads them in place), the
// head over each row's last token only.
#include <algorithm>

#include "device/ops.h"
#include "model/decoder.h"
#include "model/llama/llama_model.h"
#include "model/llama/rope.h"

namespace zerotrain::model::llama {

class LlamaDecoder : public Decoder {
 public:
  LlamaDecoder(const LlamaModel& m, int64_t B, int64_t Tmax, int64_t chunk)
      : Decoder(m.device(), B, Tmax, chunk, m.cfg_.vocab_size, m.cfg_.padded_vocab), m_(m) {}

  Status allocate() {
    ZT_RETURN_IF_ERROR(allocate_io());
    const LlamaConfig& c = m_.cfg_;
    const int64_t C = c.hidden_size, KC = c.kv_dim(), I = c.intermediate_size;
    const int64_t rows = B_ * max_chunk_, half = c.head_dim() / 2;
    const auto floats = [](int64_t n) { return static_cast<size_t>(n) * sizeof(float); };
    ZT_ASSIGN_OR_RETURN(
        cache_, device_.allocate(floats(2 * c.num_layers * B_ * Tmax_ * KC),
                                 device::MemoryCategory::kActivations, "generation KV cache"));
    ZT_ASSIGN_OR_RETURN(
        scratch_,
        device_.allocate(floats(rows * (4 * C + 2 * KC + 3 * C + 3 * I) + 2 * Tmax_ * half),
                         device::MemoryCategory::kActivations, "generation activations"));
    const RopeTables rope = rope_tables(c, Tmax_);
    cos_ = scratch_.as<float>() + rows * (4 * C + 2 * KC + 3 * C + 3 * I);
    sin_ = cos_ + Tmax_ * half;
    ZT_RETURN_IF_ERROR(device_.copy(cos_, rope.cos.data(), rope.cos.size() * sizeof(float)));
    return device_.copy(sin_, rope.sin.data(), rope.sin.size() * sizeof(float));
  }

 protected:
  Status forward(int64_t n, int64_t pos) override {
    const LlamaConfig& c = m_.cfg_;
    const int64_t C = c.hidden_size, KC = c.kv_dim(), I = c.intermediate_size, NH = c.num_heads,
                  NKV = c.num_kv_heads, HD = c.head_dim(), BN = B_ * n;
    const float eps = static_cast<float>(c.rms_norm_eps);
    const device::Ops& o = device_.ops();
    const BlockSlots& s = m_.slots_;
    float* x = scratch_.as<float>();  // residual stream [BN, C]
    float* ln = x + BN * C;
    float* att = ln + BN * C;
    float* proj = att + BN * C;
    float* q = proj + BN * C;        // [BN, C]
    float* k = q + BN * C;           // [BN, KC]
    float* v = k + BN * KC;          // [BN, KC]
    float* qkv = v + BN * KC;        // [BN, 3C], kv heads repeated
    float* gate = qkv + BN * 3 * C;  // [BN, I]
    float* up = gate + BN * I;
    float* act = up + BN * I;
    const auto linear = [&](float* out, const float* in, int64_t l, int w, int b, int64_t ic,
                            int64_t oc) {
      const TensorInfo* bias = m_.block_bias(l, b);
      return o.linear_forward(out, in, m_.p(m_.block(l, w)), bias ? m_.p(*bias) : nullptr, B_, n,
                              ic, oc);
    };
    ZT_RETURN_IF_ERROR(o.encoder_forward(x, tokens_.as<int32_t>(),
                                         m_.p(m_.layout().tensors().front()), nullptr, B_, n, C,
                                         c.vocab_size));
    // Left-padded rows count their RoPE positions from their start.
    const int32_t* positions = nullptr;
    if (row_first() != nullptr) {
      ZT_ASSIGN_OR_RETURN(positions, row_positions(n, pos));
    }
    const float* cos = positions ? cos_ : cos_ + pos * HD / 2;
    const float* sin = positions ? sin_ : sin_ + pos * HD / 2;
    for (int64_t l = 0; l < c.num_layers; ++l) {
      float* kc = cache_.as<float>() + 2 * l * B_ * Tmax_ * KC;
      float* vc = kc + B_ * Tmax_ * KC;
      ZT_RETURN_IF_ERROR(
          o.rmsnorm_forward(ln, nullptr, x, m_.p(m_.block(l, s.input_norm)), BN, C, eps));
      ZT_RETURN_IF_ERROR(linear(q, ln, l, s.q_weight, s.q_bias, C, C));
      ZT_RETURN_IF_ERROR(linear(k, ln, l, s.k_weight, s.k_bias, C, KC));
      ZT_RETURN_IF_ERROR(linear(v, ln, l, s.v_weight, s.v_bias, C, KC));
      ZT_RETURN_IF_ERROR(o.rope_pack_qkv(qkv, q, k, v, cos, sin, B_, n, NH, NKV, HD, positions));
      ZT_RETURN_IF_ERROR(o.attention_decode(att, qkv, kc, vc, B_, n, pos, Tmax_, NH, NKV, HD,
                                            c.windowed(l) ? c.sliding_window : 0, row_first()));
      ZT_RETURN_IF_ERROR(linear(proj, att, l, s.o_weight, s.o_bias, C, C));
      ZT_RETURN_IF_ERROR(o.residual_forward(x, x, proj, BN * C));
      ZT_RETURN_IF_ERROR(
          o.rmsnorm_forward(ln, nullptr, x, m_.p(m_.block(l, s.post_norm)), BN, C, eps));
      ZT_RETURN_IF_ERROR(linear(gate, ln, l, s.gate, -1, C, I));
      ZT_RETURN_IF_ERROR(linear(up, ln, l, s.up, -1, C, I));
      ZT_RETURN_IF_ERROR(o.swiglu_forward(act, gate, up, BN * I));
      ZT_RETURN_IF_ERROR(linear(proj, act, l, s.down, -1, I, C));
      ZT_RETURN_IF_ERROR(o.residual_forward(x, x, proj, BN * C));
    }
    for (int64_t b = 0; b < B_; ++b) {
      ZT_RETURN_IF_ERROR(device_.copy(att + b * C, x + (b * n + n - 1) * C, C * sizeof(float)));
    }
    const TensorInfo& norm = m_.layout().group_tensor(m_.num_groups() - 1, 0);
    ZT_RETURN_IF_ERROR(o.rmsnorm_forward(ln, nullptr, att, m_.p(norm), B_, C, eps));
    return o.linear_forward(logits_.as<float>(), ln, m_.p(m_.head_weight()), nullptr, B_, 1, C,
                            c.padded_vocab);
  }

 private:
  const LlamaModel& m_;
  device::Buffer cache_, scratch_;  // [L][K,V][B,NKV,Tmax,HD]; activations and RoPE tables
  float* cos_ = nullptr;
  float* sin_ = nullptr;
};

StatusOr<std::unique_ptr<Decoder>> LlamaModel::make_decoder(int64_t batch, int64_t max_seq) const {
  if (adapters() != nullptr)
    return invalid_argument("generate: merge the LoRA adapter into the base first (--adapter)");
  if (batch < 1 || max_seq < 1 || max_seq > cfg_.max_position_embeddings) {
    return invalid_argument("generate: " + std::to_string(max_seq) + " positions; the model has " +
                            std::to_string(cfg_.max_position_embeddings) +
                            " (max_position_embeddings)");
  }
  ZT_RETURN_IF_ERROR(check_parameters_bound("generate"));
  auto d = std::make_unique<LlamaDecoder>(*this, batch, max_seq, std::min<int64_t>(max_seq, 256));
  ZT_RETURN_IF_ERROR(d->allocate());
  return std::unique_ptr<Decoder>(std::move(d));
}

}  // namespace zerotrain::model::llama
