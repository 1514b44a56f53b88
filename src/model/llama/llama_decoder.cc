// The Llama family's KV-cached decoder (model/decoder.h): llama_stages.cc's
// forward over n new tokens a row at positions [pos, pos+n): RoPE at those
// positions (rows pos.. of the tables), the cache keeping the NKV key/value
// heads (grouped-query attention reads them in place), the head over each
// row's last token only. In fp32, or in bf16 at llama_stages_bf16.cc's
// rounding points (bf16 GEMM operands and outputs, a bf16 cache; the
// residual stream, the norms' sums and the logits fp32).
#include <algorithm>

#include "device/ops.h"
#include "model/decoder.h"
#include "model/llama/llama_model.h"
#include "model/llama/rope.h"

namespace zerotrain::model::llama {

class LlamaDecoder : public Decoder {
 public:
  LlamaDecoder(const LlamaModel& m, int64_t B, int64_t Tmax, int64_t chunk, DType dtype)
      : Decoder(m.device(), B, Tmax, chunk, m.cfg_.vocab_size, m.cfg_.padded_vocab, dtype),
        m_(m) {}

  Status allocate() {
    ZT_RETURN_IF_ERROR(allocate_io(&m_));
    const LlamaConfig& c = m_.cfg_;
    const int64_t C = c.hidden_size, KC = c.kv_dim(), I = c.intermediate_size;
    const int64_t rows = B_ * max_chunk_, half = c.head_dim() / 2;
    const size_t elem = dtype_size(dtype_);
    const auto floats = [](int64_t n) { return static_cast<size_t>(n) * sizeof(float); };
    ZT_ASSIGN_OR_RETURN(
        cache_, device_.allocate(elem * static_cast<size_t>(2 * c.num_layers * B_ * Tmax_ * KC),
                                 device::MemoryCategory::kActivations, "generation KV cache"));
    // fp32: x, ln, att, proj, q, k, v, qkv, gate, up, act; bf16: x and proj
    // fp32, the GEMM operands and outputs bf16.
    const int64_t fp32_rows = dtype_ == DType::kFloat32 ? 4 * C + 2 * KC + 3 * C + 3 * I : 2 * C;
    const int64_t bf16_rows = dtype_ == DType::kFloat32 ? 0 : 4 * C + 2 * KC + 3 * C + 3 * I;
    ZT_ASSIGN_OR_RETURN(
        scratch_, device_.allocate(floats(rows * fp32_rows + 2 * Tmax_ * half) +
                                       static_cast<size_t>(rows * bf16_rows) * sizeof(BFloat16),
                                   device::MemoryCategory::kActivations, "generation activations"));
    const RopeTables rope = rope_tables(c, Tmax_);
    cos_ = scratch_.as<float>() + rows * fp32_rows;
    sin_ = cos_ + Tmax_ * half;
    scratch16_ = reinterpret_cast<BFloat16*>(sin_ + Tmax_ * half);
    ZT_RETURN_IF_ERROR(device_.copy(cos_, rope.cos.data(), rope.cos.size() * sizeof(float)));
    return device_.copy(sin_, rope.sin.data(), rope.sin.size() * sizeof(float));
  }

 protected:
  Status forward(int64_t n, int64_t pos) override {
    const LlamaConfig& c = m_.cfg_;
    const int64_t C = c.hidden_size, BN = B_ * n;
    const device::Ops& o = device_.ops();
    float* x = scratch_.as<float>();  // the residual stream [BN, C]
    ZT_RETURN_IF_ERROR(o.encoder_forward(x, tokens_.as<int32_t>(),
                                         m_.p(m_.layout().tensors().front()), nullptr, B_, n, C,
                                         c.vocab_size));
    // Left-padded rows count their RoPE positions from their start.
    const int32_t* positions = nullptr;
    if (row_first() != nullptr) {
      ZT_ASSIGN_OR_RETURN(positions, row_positions(n, pos));
    }
    const float* cos = positions ? cos_ : cos_ + pos * c.head_dim() / 2;
    const float* sin = positions ? sin_ : sin_ + pos * c.head_dim() / 2;
    for (int64_t l = 0; l < c.num_layers; ++l) {
      ZT_RETURN_IF_ERROR(dtype_ == DType::kFloat32 ? block_f32(l, n, pos, cos, sin, positions)
                                                   : block_bf16(l, n, pos, cos, sin, positions));
    }
    // Each row's last position, through the final norm and the head.
    float* last = x + BN * C;
    for (int64_t b = 0; b < B_; ++b) {
      ZT_RETURN_IF_ERROR(device_.copy(last + b * C, x + (b * n + n - 1) * C, C * sizeof(float)));
    }
    const TensorInfo& norm = m_.layout().group_tensor(m_.num_groups() - 1, 0);
    const float eps = static_cast<float>(c.rms_norm_eps);
    if (dtype_ == DType::kBFloat16) {
      ZT_RETURN_IF_ERROR(o.rmsnorm_forward_bf16(scratch16_, nullptr, last, m_.p(norm), B_, C, eps));
      return o.linear_forward_bf16(logits_.as<float>(), scratch16_, w16(m_.head_weight()), nullptr,
                                   B_, 1, C, c.padded_vocab);
    }
    float* ln = last + B_ * C;
    ZT_RETURN_IF_ERROR(o.rmsnorm_forward(ln, nullptr, last, m_.p(norm), B_, C, eps));
    return o.linear_forward(logits_.as<float>(), ln, m_.p(m_.head_weight()), nullptr, B_, 1, C,
                            c.padded_vocab);
  }

 private:
  const float* bias(int64_t l, int slot) const {
    const TensorInfo* b = m_.block_bias(l, slot);
    return b ? m_.p(*b) : nullptr;
  }
  int64_t window(int64_t l) const { return m_.cfg_.windowed(l) ? m_.cfg_.sliding_window : 0; }

  Status block_f32(int64_t l, int64_t n, int64_t pos, const float* cos, const float* sin,
                   const int32_t* positions) {
    const LlamaConfig& c = m_.cfg_;
    const int64_t C = c.hidden_size, KC = c.kv_dim(), I = c.intermediate_size, BN = B_ * n;
    const float eps = static_cast<float>(c.rms_norm_eps);
    const device::Ops& o = device_.ops();
    const BlockSlots& s = m_.slots_;
    float* x = scratch_.as<float>();
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
    float* kc = cache_.as<float>() + 2 * l * B_ * Tmax_ * KC;
    float* vc = kc + B_ * Tmax_ * KC;
    const auto linear = [&](float* out, const float* in, int w, int b, int64_t ic, int64_t oc) {
      return o.linear_forward(out, in, m_.p(m_.block(l, w)), bias(l, b), B_, n, ic, oc);
    };
    ZT_RETURN_IF_ERROR(
        o.rmsnorm_forward(ln, nullptr, x, m_.p(m_.block(l, s.input_norm)), BN, C, eps));
    ZT_RETURN_IF_ERROR(linear(q, ln, s.q_weight, s.q_bias, C, C));
    ZT_RETURN_IF_ERROR(linear(k, ln, s.k_weight, s.k_bias, C, KC));
    ZT_RETURN_IF_ERROR(linear(v, ln, s.v_weight, s.v_bias, C, KC));
    ZT_RETURN_IF_ERROR(o.rope_pack_qkv(qkv, q, k, v, cos, sin, B_, n, c.num_heads, c.num_kv_heads,
                                       c.head_dim(), positions));
    ZT_RETURN_IF_ERROR(o.attention_decode(att, qkv, kc, vc, B_, n, pos, Tmax_, c.num_heads,
                                          c.num_kv_heads, c.head_dim(), window(l), row_first()));
    ZT_RETURN_IF_ERROR(linear(proj, att, s.o_weight, s.o_bias, C, C));
    ZT_RETURN_IF_ERROR(o.residual_forward(x, x, proj, BN * C));
    ZT_RETURN_IF_ERROR(
        o.rmsnorm_forward(ln, nullptr, x, m_.p(m_.block(l, s.post_norm)), BN, C, eps));
    ZT_RETURN_IF_ERROR(linear(gate, ln, s.gate, -1, C, I));
    ZT_RETURN_IF_ERROR(linear(up, ln, s.up, -1, C, I));
    ZT_RETURN_IF_ERROR(o.swiglu_forward(act, gate, up, BN * I));
    ZT_RETURN_IF_ERROR(linear(proj, act, s.down, -1, I, C));
    return o.residual_forward(x, x, proj, BN * C);
  }

  // llama_stages_bf16.cc's forward_block_bf16 over the cache.
  Status block_bf16(int64_t l, int64_t n, int64_t pos, const float* cos, const float* sin,
                    const int32_t* positions) {
    const LlamaConfig& c = m_.cfg_;
    const int64_t C = c.hidden_size, KC = c.kv_dim(), I = c.intermediate_size, BN = B_ * n;
    const float eps = static_cast<float>(c.rms_norm_eps);
    const device::Ops& o = device_.ops();
    const BlockSlots& s = m_.slots_;
    float* x = scratch_.as<float>();
    float* proj = x + BN * C;              // fp32 [BN, C]
    BFloat16* ln = scratch16_;             // [BN, C]
    BFloat16* att = ln + BN * C;           // [BN, C]
    BFloat16* q = att + BN * C;            // [BN, C]
    BFloat16* k = q + BN * C;              // [BN, KC]
    BFloat16* v = k + BN * KC;             // [BN, KC]
    BFloat16* qkv = v + BN * KC;           // [BN, 3C]
    BFloat16* gate = qkv + BN * 3 * C;     // [BN, I]
    BFloat16* up = gate + BN * I;
    BFloat16* act = up + BN * I;
    BFloat16* kc = cache_.as<BFloat16>() + 2 * l * B_ * Tmax_ * KC;
    BFloat16* vc = kc + B_ * Tmax_ * KC;
    const auto linear = [&](auto* out, const BFloat16* in, int w, int b, int64_t ic, int64_t oc) {
      return o.linear_forward_bf16(out, in, w16(m_.block(l, w)), bias(l, b), B_, n, ic, oc);
    };
    ZT_RETURN_IF_ERROR(
        o.rmsnorm_forward_bf16(ln, nullptr, x, m_.p(m_.block(l, s.input_norm)), BN, C, eps));
    ZT_RETURN_IF_ERROR(linear(q, ln, s.q_weight, s.q_bias, C, C));
    ZT_RETURN_IF_ERROR(linear(k, ln, s.k_weight, s.k_bias, C, KC));
    ZT_RETURN_IF_ERROR(linear(v, ln, s.v_weight, s.v_bias, C, KC));
    ZT_RETURN_IF_ERROR(o.rope_pack_qkv_bf16(qkv, q, k, v, cos, sin, B_, n, c.num_heads,
                                            c.num_kv_heads, c.head_dim(), positions));
    ZT_RETURN_IF_ERROR(o.attention_decode_bf16(att, qkv, kc, vc, B_, n, pos, Tmax_, c.num_heads,
                                               c.num_kv_heads, c.head_dim(), window(l),
                                               row_first()));
    ZT_RETURN_IF_ERROR(linear(proj, att, s.o_weight, s.o_bias, C, C));
    ZT_RETURN_IF_ERROR(o.residual_forward(x, x, proj, BN * C));
    ZT_RETURN_IF_ERROR(
        o.rmsnorm_forward_bf16(ln, nullptr, x, m_.p(m_.block(l, s.post_norm)), BN, C, eps));
    ZT_RETURN_IF_ERROR(linear(gate, ln, s.gate, -1, C, I));
    ZT_RETURN_IF_ERROR(linear(up, ln, s.up, -1, C, I));
    ZT_RETURN_IF_ERROR(o.swiglu_forward_bf16(act, gate, up, BN * I));
    ZT_RETURN_IF_ERROR(linear(proj, act, s.down, -1, I, C));
    return o.residual_forward(x, x, proj, BN * C);
  }

  const LlamaModel& m_;
  // [L][K,V][B,NKV,Tmax,HD] in dtype_; the step's activations (fp32, then
  // the RoPE tables, then the bf16 operands).
  device::Buffer cache_, scratch_;
  float* cos_ = nullptr;
  float* sin_ = nullptr;
  BFloat16* scratch16_ = nullptr;
};

StatusOr<std::unique_ptr<Decoder>> LlamaModel::make_decoder(int64_t batch, int64_t max_seq,
                                                            DType dtype) const {
  if (adapters() != nullptr)
    return invalid_argument("generate: merge the LoRA adapter into the base first (--adapter)");
  if (batch < 1 || max_seq < 1 || max_seq > cfg_.max_position_embeddings) {
    return invalid_argument("generate: " + std::to_string(max_seq) + " positions; the model has " +
                            std::to_string(cfg_.max_position_embeddings) +
                            " (max_position_embeddings)");
  }
  ZT_RETURN_IF_ERROR(check_parameters_bound("generate"));
  auto d = std::make_unique<LlamaDecoder>(*this, batch, max_seq, std::min<int64_t>(max_seq, 256),
                                          dtype);
  ZT_RETURN_IF_ERROR(d->allocate());
  return std::unique_ptr<Decoder>(std::move(d));
}

}  // namespace zerotrain::model::llama
