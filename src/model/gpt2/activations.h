// Activations: the forward's saved tensors and the backward's scratch for a
// GptModel, carved out of one 64-byte aligned buffer sized for a maximum
// (B, T). Internal to model/ (gpt_model.h is the public interface).
// Each array is laid out for the maximum shape; a smaller (B, T) uses the
// prefix of each array in the dense [B,T,...] layout the kernels expect.
//
//   Activations a;
//   int64_t n = a.plan(cfg, B, T, true, rows, false, false, nullptr);  // count floats
//   AlignedBuffer<float> buf(n);
//   a.plan(cfg, B, T, true, rows, false, false, buf.data());           // bind pointers
//
// Thread-safety: plain data, one owner.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/half.h"
#include "model/gpt2/config.h"

namespace zerotrain::model::gpt2 {

// Saved per layer: what the backward cannot cheaply recompute. ln_1 and
// ln_2 outputs and gelu(fch) are recomputed in the backward from the saved
// inputs and row statistics (llm.c's recompute): elementwise work next to
// the GEMMs, bit-identical to the forward's values, and 6·B·T·C floats a
// layer less (a quarter of gpt2-5m's activations).
//
// With bf16 (GptModel's bf16_compute) the block's GEMM outputs that feed a
// bf16 operand, an elementwise op or the attention are saved in bf16, as
// autocast keeps them: qkv16 (the attention runs at the rounded values),
// atty16 (c_proj's input, the bits the GEMM reads anyway) and fch16
// (gelu's input; gelu and its backward run at the rounded value). The
// c_attn and c_fc GEMMs and the attention write them rounded, so they have
// no fp32 form at all (qkv, atty and fch are null), and neither have the
// attention's gradients d atty and d qkv (datty and dqkv are null: they
// live in the model's bf16 operand scratch). 8·B·T·C floats a layer and
// 4·B·T·C of scratch less, and no rounding passes.
struct LayerActivations {
  float* ln1_mean;             // [B,T]
  float* ln1_rstd;             // [B,T]
  float* qkv;                  // [B,T,3C] (fp32 only)
  float* atty;                 // [B,T,C] attention output before c_proj (fp32 only)
  float* att;                  // [B,NH,T,T] softmax probabilities, or [B,NH,T] their
                               // log-sum-exp when the attention is recomputed
  float* res2;                 // [B,T,C] residual after attention
  float* ln2_mean;             // [B,T]
  float* ln2_rstd;             // [B,T]
  float* fch;                  // [B,T,4C] c_fc output (gelu input; fp32 only)
  float* res3;                 // [B,T,C] block output
  BFloat16* qkv16 = nullptr;   // [B,T,3C] bf16 (bf16 only)
  BFloat16* atty16 = nullptr;  // [B,T,C] bf16 (bf16 only)
  BFloat16* fch16 = nullptr;   // [B,T,4C] bf16 (bf16 only)
};

struct Activations {
  float* encoded;                        // [B,T,C] wte + wpe
  std::vector<LayerActivations> layers;  // [L]
  float* lnf;                            // [B,T,C]
  float* lnf_mean;                       // [B,T]
  float* lnf_rstd;                       // [B,T]
  // The lm head runs over row chunks of head_rows rows: logits holds one
  // chunk [head_rows, Vp] (all [B,T,Vp] when the model keeps full logits)
  // and, on the fp32 path, is overwritten by that chunk's dlogits (bf16
  // writes them into the operand scratch); the head's backward is done in
  // the forward at unit dloss (dln: d lnf, dwte: the chunks' sum) and
  // scaled by the backward's dloss.
  float* logits;
  float* dwte;    // [Vp,C]
  float* losses;  // [B,T] per-token cross-entropy
  // The pass's inputs in device memory (copied from the host by forward).
  int32_t* tokens;   // [B,T]
  int32_t* targets;  // [B,T]
  // Scratch, reused by every layer:
  float* proj;  // [B,T,C] forward: c_proj outputs before the residual add
  // fp32 only (bf16 writes both straight into the GEMM's bf16 operand):
  float* ln;         // [B,T,C] the layer's ln_1 / ln_2 output (forward, recomputed in backward)
  float* fch_gelu;   // [B,T,4C] gelu(fch) (forward, recomputed in backward), then d fch
  float* dres;       // [B,T,C] backward: gradient of the residual stream
  float* dln;        // [B,T,C]
  float* datty;      // [B,T,C] (fp32 only)
  float* dqkv;       // [B,T,3C] (fp32 only)
  float* dfch_gelu;  // [B,T,4C]

  int64_t head_rows = 0;

  // Binds the pointers into `base` (when not null) and returns the floats
  // needed for shape (B, T) of cfg, each array starting 64-byte aligned.
  // att_lse: keep the [B,NH,T] log-sum-exp instead of the attention map;
  // head_rows: rows of the logits array (the lm head's chunk); bf16: the
  // bf16 path's arrays (see LayerActivations); checkpoint: activation
  // checkpointing, every layer's arrays but its res3 shared with layer 0's.
  int64_t plan(const GptConfig& cfg, int64_t B, int64_t T, bool att_lse, int64_t head_rows,
               bool bf16, bool checkpoint, float* base);
};

// Rows of one lm-head chunk for B·T rows: `requested` if > 0, else about
// 1 Mi floats of logits (4 MiB) but at least 64 rows so the GEMMs stay
// efficient; never more than B·T.
inline int64_t head_chunk_rows(const GptConfig& cfg, int64_t rows, int64_t requested = 0) {
  const int64_t target = (int64_t{1} << 20) / cfg.padded_vocab / 16 * 16;
  return std::min(rows, requested > 0 ? requested : std::max<int64_t>(64, target));
}

}  // namespace zerotrain::model::gpt2
