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
      : Decoder(m.device(), B, Tmax, chunk, m.cfg_.vocab_size, m.cfg_.padded_vocab, dtype), m_(m) {}

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
    // fp32: the residual stream x and proj [rows, C], the RoPE tables; then
    // the GEMM operands and outputs in dtype_: ln, att, q [rows, C], k, v
    // [rows, KC], qkv [rows, 3C], gate, up, act [rows, I].
    ZT_ASSIGN_OR_RETURN(
        scratch_, device_.allocate(floats(rows * 2 * C + 2 * Tmax_ * half) +
                                       elem * static_cast<size_t>(rows * (6 * C + 2 * KC + 3 * I)),
                                   device::MemoryCategory::kActivations, "generation activations"));
    const RopeTables rope = rope_tables(c, Tmax_);
    cos_ = scratch_.as<float>() + rows * 2 * C;
    sin_ = cos_ + Tmax_ * half;
    operands_ = sin_ + Tmax_ * half;
    ZT_RETURN_IF_ERROR(device_.copy(cos_, rope.cos.data(), rope.cos.size() * sizeof(float)));
    return device_.copy(sin_, rope.sin.data(), rope.sin.size() * sizeof(float));
  }

 protected:
  Status forward(int64_t n, int64_t pos) override {
    return dtype_ == DType::kFloat32 ? forward_as<float>(n, pos) : forward_as<BFloat16>(n, pos);
  }

 private:
  // The forward on T operands (fp32, or bf16 at llama_stages_bf16.cc's
  // rounding points): the blocks, then each row's last position through the
  // final norm and the head.
  template <typename T>
  Status forward_as(int64_t n, int64_t pos) {
    const LlamaConfig& c = m_.cfg_;
    const int64_t C = c.hidden_size, BN = B_ * n;
    float* x = scratch_.as<float>();  // the residual stream [BN, C]
    ZT_RETURN_IF_ERROR(device_.ops().encoder_forward(x, tokens_.as<int32_t>(),
                                                     m_.p(m_.layout().tensors().front()), nullptr,
                                                     B_, n, C, c.vocab_size));
    // Left-padded rows count their RoPE positions from their start.
    const int32_t* positions = nullptr;
    if (row_first() != nullptr) {
      ZT_ASSIGN_OR_RETURN(positions, row_positions(n, pos));
    }
    const float* cos = positions ? cos_ : cos_ + pos * c.head_dim() / 2;
    const float* sin = positions ? sin_ : sin_ + pos * c.head_dim() / 2;
    for (int64_t l = 0; l < c.num_layers; ++l) {
      ZT_RETURN_IF_ERROR(block<T>(l, n, pos, cos, sin, positions));
    }
    float* last = x + BN * C;  // proj's rows
    for (int64_t b = 0; b < B_; ++b) {
      ZT_RETURN_IF_ERROR(device_.copy(last + b * C, x + (b * n + n - 1) * C, C * sizeof(float)));
    }
    T* ln = static_cast<T*>(operands_);
    ZT_RETURN_IF_ERROR(norm(ln, last, m_.layout().group_tensor(m_.num_groups() - 1, 0), B_));
    return linear(logits_.as<float>(), ln, m_.head_weight(), nullptr, 1, C, c.padded_vocab);
  }

  template <typename T>
  Status block(int64_t l, int64_t n, int64_t pos, const float* cos, const float* sin,
               const int32_t* positions) {
    const LlamaConfig& c = m_.cfg_;
    const int64_t C = c.hidden_size, KC = c.kv_dim(), I = c.intermediate_size, BN = B_ * n;
    const BlockSlots& s = m_.slots_;
    float* x = scratch_.as<float>();
    float* proj = x + BN * C;
    T* ln = static_cast<T*>(operands_);  // [BN, C]
    T* att = ln + BN * C;                // [BN, C]
    T* q = att + BN * C;                 // [BN, C]
    T* k = q + BN * C;                   // [BN, KC]
    T* v = k + BN * KC;                  // [BN, KC]
    T* qkv = v + BN * KC;                // [BN, 3C], kv heads repeated
    T* gate = qkv + BN * 3 * C;          // [BN, I]
    T* up = gate + BN * I;
    T* act = up + BN * I;
    T* kc = cache_.as<T>() + 2 * l * B_ * Tmax_ * KC;
    T* vc = kc + B_ * Tmax_ * KC;
    const auto lin = [&](auto* out, const T* in, int w, int b, int64_t ic, int64_t oc) {
      return linear(out, in, m_.block(l, w), bias(l, b), n, ic, oc);
    };
    ZT_RETURN_IF_ERROR(norm(ln, x, m_.block(l, s.input_norm), BN));
    ZT_RETURN_IF_ERROR(lin(q, ln, s.q_weight, s.q_bias, C, C));
    ZT_RETURN_IF_ERROR(lin(k, ln, s.k_weight, s.k_bias, C, KC));
    ZT_RETURN_IF_ERROR(lin(v, ln, s.v_weight, s.v_bias, C, KC));
    ZT_RETURN_IF_ERROR(rope(qkv, q, k, v, cos, sin, n, positions));
    ZT_RETURN_IF_ERROR(
        attend(att, qkv, kc, vc, n, pos, c.num_heads, c.num_kv_heads, c.head_dim(), window(l)));
    ZT_RETURN_IF_ERROR(lin(proj, att, s.o_weight, s.o_bias, C, C));
    ZT_RETURN_IF_ERROR(device_.ops().residual_forward(x, x, proj, BN * C));
    ZT_RETURN_IF_ERROR(norm(ln, x, m_.block(l, s.post_norm), BN));
    ZT_RETURN_IF_ERROR(lin(gate, ln, s.gate, -1, C, I));
    ZT_RETURN_IF_ERROR(lin(up, ln, s.up, -1, C, I));
    ZT_RETURN_IF_ERROR(swiglu(act, gate, up, BN * I));
    ZT_RETURN_IF_ERROR(lin(proj, act, s.down, -1, I, C));
    return device_.ops().residual_forward(x, x, proj, BN * C);
  }

  // The family's ops on T operands: RMSNorm of fp32 rows into T, RoPE with
  // grouped-query packing, SwiGLU.
  Status norm(float* out, const float* x, const TensorInfo& w, int64_t rows) const {
    return device_.ops().rmsnorm_forward(out, nullptr, x, m_.p(w), rows, m_.cfg_.hidden_size,
                                         static_cast<float>(m_.cfg_.rms_norm_eps));
  }
  Status norm(BFloat16* out, const float* x, const TensorInfo& w, int64_t rows) const {
    return device_.ops().rmsnorm_forward_bf16(out, nullptr, x, m_.p(w), rows, m_.cfg_.hidden_size,
                                              static_cast<float>(m_.cfg_.rms_norm_eps));
  }
  Status rope(float* qkv, const float* q, const float* k, const float* v, const float* cos,
              const float* sin, int64_t n, const int32_t* positions) const {
    const LlamaConfig& c = m_.cfg_;
    return device_.ops().rope_pack_qkv(qkv, q, k, v, cos, sin, B_, n, c.num_heads, c.num_kv_heads,
                                       c.head_dim(), positions);
  }
  Status rope(BFloat16* qkv, const BFloat16* q, const BFloat16* k, const BFloat16* v,
              const float* cos, const float* sin, int64_t n, const int32_t* positions) const {
    const LlamaConfig& c = m_.cfg_;
    return device_.ops().rope_pack_qkv_bf16(qkv, q, k, v, cos, sin, B_, n, c.num_heads,
                                            c.num_kv_heads, c.head_dim(), positions);
  }
  Status swiglu(float* out, const float* gate, const float* up, int64_t N) const {
    return device_.ops().swiglu_forward(out, gate, up, N);
  }
  Status swiglu(BFloat16* out, const BFloat16* gate, const BFloat16* up, int64_t N) const {
    return device_.ops().swiglu_forward_bf16(out, gate, up, N);
  }
  const float* bias(int64_t l, int slot) const {
    const TensorInfo* b = m_.block_bias(l, slot);
    return b ? m_.p(*b) : nullptr;
  }
  int64_t window(int64_t l) const { return m_.cfg_.windowed(l) ? m_.cfg_.sliding_window : 0; }

  const LlamaModel& m_;
  // [L][K,V][B,NKV,Tmax,HD] in dtype_; the step's activations (fp32, the
  // RoPE tables, then the operands in dtype_ from operands_).
  device::Buffer cache_, scratch_;
  float* cos_ = nullptr;
  float* sin_ = nullptr;
  void* operands_ = nullptr;
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
  auto d =
      std::make_unique<LlamaDecoder>(*this, batch, max_seq, std::min<int64_t>(max_seq, 256), dtype);
  ZT_RETURN_IF_ERROR(d->allocate());
  return std::unique_ptr<Decoder>(std::move(d));
}

}  // namespace zerotrain::model::llama
