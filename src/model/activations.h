// Activations: the forward's saved tensors and the backward's scratch for a
// GptModel, carved out of one 64-byte aligned buffer sized for a maximum
// (B, T). Internal to model/ (gpt_model.h is the public interface).
// Each array is laid out for the maximum shape; a smaller (B, T) uses the
// prefix of each array in the dense [B,T,...] layout the kernels expect.
//
//   Activations a;
//   int64_t n = a.plan(cfg, B, T, true, nullptr);  // count floats
//   AlignedBuffer<float> buf(n);
//   a.plan(cfg, B, T, true, buf.data());           // bind pointers
//
// Thread-safety: plain data, one owner.
#pragma once

#include <cstdint>
#include <vector>

#include "model/gpt_config.h"

namespace zerotrain::model {

// Saved per layer: what the backward cannot cheaply recompute. ln_1 and
// ln_2 outputs and gelu(fch) are recomputed in the backward from the saved
// inputs and row statistics (llm.c's recompute): elementwise work next to
// the GEMMs, bit-identical to the forward's values, and 6·B·T·C floats a
// layer less (a quarter of gpt2-5m's activations).
struct LayerActivations {
  float* ln1_mean;  // [B,T]
  float* ln1_rstd;  // [B,T]
  float* qkv;       // [B,T,3C]
  float* atty;      // [B,T,C] attention output before c_proj
  float* att;       // [B,NH,T,T] softmax probabilities, or [B,NH,T] their
                    // log-sum-exp when the attention is recomputed
  float* res2;      // [B,T,C] residual after attention
  float* ln2_mean;  // [B,T]
  float* ln2_rstd;  // [B,T]
  float* fch;       // [B,T,4C] c_fc output (gelu input)
  float* res3;      // [B,T,C] block output
};

struct Activations {
  float* encoded;                        // [B,T,C] wte + wpe
  std::vector<LayerActivations> layers;  // [L]
  float* lnf;                            // [B,T,C]
  float* lnf_mean;                       // [B,T]
  float* lnf_rstd;                       // [B,T]
  float* logits;                         // [B,T,Vp]; the backward overwrites it with dlogits
  float* losses;                         // [B,T] per-token cross-entropy
  float* ce_lse;                         // [B,T] log-sum-exp of each logits row
  // Scratch, reused by every layer:
  float* proj;       // [B,T,C] forward: c_proj outputs before the residual add
  float* ln;         // [B,T,C] the layer's ln_1 / ln_2 output (forward, recomputed in backward)
  float* fch_gelu;   // [B,T,4C] gelu(fch) (forward, recomputed in backward), then d fch
  float* dres;       // [B,T,C] backward: gradient of the residual stream
  float* dln;        // [B,T,C]
  float* datty;      // [B,T,C]
  float* dqkv;       // [B,T,3C]
  float* dfch_gelu;  // [B,T,4C]

  // Binds the pointers into `base` (when not null) and returns the floats
  // needed for shape (B, T) of cfg, each array starting 64-byte aligned.
  // att_lse: keep the [B,NH,T] log-sum-exp instead of the attention map.
  int64_t plan(const GptConfig& cfg, int64_t B, int64_t T, bool att_lse, float* base);
};

}  // namespace zerotrain::model
