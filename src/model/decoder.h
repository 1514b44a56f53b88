// Generation with a KV cache: a model's incremental forward. Each step
// feeds a row's next tokens at the current position; the keys and values
// of every position stay cached per layer, so a new token costs one
// token's projections plus one pass over the cache, not a forward over
// the whole sequence. The family builds it (Module::make_decoder) over its
// bound fp32 parameters, which it reads and never writes.
//
// In bf16 (make_decoder(..., DType::kBFloat16)) it runs as the family's
// bf16_compute forward does (autocast's rounding points): the GEMMs read
// bf16 weights (the module's bf16 views where bound, else one bf16 copy of
// the parameters the decoder rounds once at construction) and bf16
// operands, the KV cache is bf16 (half the bytes), the residual stream,
// norms' statistics, softmax and logits stay fp32.
//
//   ZT_ASSIGN_OR_RETURN(auto dec, module->make_decoder(/*batch=*/1, /*max_seq=*/1024));
//   std::vector<float> logits;                       // [B, V] after each step
//   ZT_RETURN_IF_ERROR(dec->step(prompt.data(), prompt.size(), &logits));
//   ZT_RETURN_IF_ERROR(dec->step(&next, 1, &logits));
//
// Thread-safety: one decoder per thread; several may share a model.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/half.h"
#include "core/status.h"
#include "core/tensor.h"
#include "device/device.h"
#include "model/param_layout.h"

namespace zerotrain::model {

class Module;

class Decoder {
 public:
  virtual ~Decoder() = default;
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  int64_t batch() const { return B_; }
  int64_t max_seq() const { return Tmax_; }
  // kFloat32 or kBFloat16: the weights the GEMMs read and the KV cache.
  DType dtype() const { return dtype_; }
  // Tokens fed so far a row (the next token's position).
  int64_t position() const { return position_; }
  // Forgets the cache (and the row starts): the next step starts a new sequence.
  void reset();
  // Left padding, before the first step: row b's sequence starts at cache
  // position starts[b]; the tokens it is fed before that are pads, which no
  // later token attends to, and its positions (RoPE, learned) count from
  // there. InvalidArgument after a step, for a start outside [0, max_seq())
  // or for a count other than batch().
  Status set_row_starts(std::span<const int64_t> starts);

  // Feeds tokens [B, n] (host, row-major) at position() and writes every
  // row's logits for the token after its last new one into `logits` [B, V]
  // (host). InvalidArgument past max_seq() or for a token outside [0, V).
  Status step(const int32_t* tokens, int64_t n, std::vector<float>* logits);

 protected:
  // max_chunk: the most tokens a row the family's scratch takes per
  // forward (longer steps are cut into chunks).
  Decoder(device::Device& device, int64_t B, int64_t Tmax, int64_t max_chunk, int64_t V, int64_t Vp,
          DType dtype = DType::kFloat32);
  // Allocates the token, logits and row-start buffers, and in bf16 the
  // bf16 weights of `m` (its views, or a copy); the family calls it. The
  // weight lookups and linear() need `m`; a decoder without a module
  // (tests) has none.
  Status allocate_io(const Module* m = nullptr);
  // Parameter tensor t as a GEMM on In operands reads it: the module's
  // fp32 weights, or for bf16 operands the bf16 ones.
  const float* weight(const TensorInfo& t, const float*) const;
  const BFloat16* weight(const TensorInfo& t, const BFloat16*) const {
    return w16_base_[static_cast<size_t>(t.group)] + (t.offset - group_offset_[t.group]);
  }
  // The forward's shared ops on fp32 or bf16 operands (the *_bf16 forms):
  // out [B, T, OC] = in [B, T, C]·Wᵀ + bias, fp32 out or (bf16 in) bf16 out;
  // the attention of n new tokens over a layer's cache at `pos`.
  Status linear(float* out, const float* in, const TensorInfo& w, const float* bias, int64_t T,
                int64_t C, int64_t OC) const;
  Status linear(float* out, const BFloat16* in, const TensorInfo& w, const float* bias, int64_t T,
                int64_t C, int64_t OC) const;
  Status linear(BFloat16* out, const BFloat16* in, const TensorInfo& w, const float* bias,
                int64_t T, int64_t C, int64_t OC) const;
  Status attend(float* out, const float* qkv, float* k_cache, float* v_cache, int64_t n,
                int64_t pos, int64_t NH, int64_t NKV, int64_t HD, int64_t window) const;
  Status attend(BFloat16* out, const BFloat16* qkv, BFloat16* k_cache, BFloat16* v_cache, int64_t n,
                int64_t pos, int64_t NH, int64_t NKV, int64_t HD, int64_t window) const;
  // Row b's first real cache position (0 without left padding).
  int64_t row_start(int64_t b) const { return padded_ ? row_starts_[static_cast<size_t>(b)] : 0; }
  // The row starts in device memory [B] for Ops::attention_decode; null
  // when every row starts at 0.
  const int32_t* row_first() const { return padded_ ? row_first_.as<int32_t>() : nullptr; }
  // Positions [B, n] of the n tokens fed at `pos`, counted from each row's
  // start (a pad's clamps to 0), in device memory: the RoPE table rows.
  StatusOr<const int32_t*> row_positions(int64_t n, int64_t pos);
  // The family's forward of tokens_ [B, n] (device) at `pos`, n <=
  // max_chunk: caches their keys and values and leaves each row's last
  // logits [B, Vp] in logits_.
  virtual Status forward(int64_t n, int64_t pos) = 0;

  device::Device& device_;
  device::Buffer tokens_, logits_, row_first_, positions_;
  int64_t B_, Tmax_, max_chunk_, V_, Vp_;
  DType dtype_;
  int64_t position_ = 0;
  std::vector<int64_t> row_starts_;
  bool padded_ = false;

 private:
  Status bind_bf16_weights(const Module& m);
  const Module* module_ = nullptr;
  device::Buffer w16_copy_;                // the bf16 copy where the module has no views
  std::vector<const BFloat16*> w16_base_;  // [group]
  std::vector<int64_t> group_offset_;      // [group] in the flat layout
};

}  // namespace zerotrain::model
