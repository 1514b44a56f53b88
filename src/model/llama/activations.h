// LlamaActivations: a LlamaModel's saved tensors and scratch, carved out of
// one 64-byte aligned buffer sized for a maximum (B, T); a smaller (B, T)
// uses the prefix of each array. Internal to model/llama/.
//
// Saved per layer is what the backward cannot cheaply recompute: the
// projections q, k, v (the rotated, kv-repeated qkv is packed again from
// them), the attention output and its log-sum-exp, the residual after
// attention, the MLP's gate and up, the block output, and both norms' row
// rstd. The norms' outputs and silu(gate)·up are recomputed in the
// backward, bit-identical to the forward's.
//
// The bf16 path (bf16_compute without adapters) saves the GEMM outputs the
// next op reads in bf16 only, as autocast keeps them: q16, k16, v16 (the
// rotation reads them rounded), atty16 (o_proj's operand), gate16 and
// up16 (SwiGLU's inputs), and has no fp32 form of them (q .. up are null).
// Its scratch is bf16 too: qkv16 (the rotated attention input) and dqkv16;
// the norms, silu(gate)·up, d atty, d gate, d up and d q/k/v live in the
// model's bf16 operand scratch (ln, qkv, dqkv, dq, dk, dv, act, dgate, dup
// and datty are null). Per layer 2·C + 2·KC + 2·I floats of saved
// activations fewer at each B·T row, and no rounding pass before a GEMM.
//
// Thread-safety: plain data, one owner.
#pragma once

#include <cstdint>
#include <vector>

#include "core/half.h"
#include "model/llama/config.h"

namespace zerotrain::model::llama {

struct LayerActivations {
  float* rstd1;  // [B,T]
  float* q;      // [B,T,C]
  float* k;      // [B,T,KC]
  float* v;      // [B,T,KC]
  float* atty;   // [B,T,C] attention output
  float* lse;    // [B,NH,T]
  float* res2;   // [B,T,C] residual after attention
  float* rstd2;  // [B,T]
  float* gate;   // [B,T,I]
  float* up;     // [B,T,I]
  float* res3;   // [B,T,C] block output
  // The bf16 path's (see above); null on the fp32 path.
  BFloat16* q16 = nullptr;     // [B,T,C]
  BFloat16* k16 = nullptr;     // [B,T,KC]
  BFloat16* v16 = nullptr;     // [B,T,KC]
  BFloat16* atty16 = nullptr;  // [B,T,C]
  BFloat16* gate16 = nullptr;  // [B,T,I]
  BFloat16* up16 = nullptr;    // [B,T,I]
};

struct Activations {
  float* encoded;  // [B,T,C] token embeddings (layer 0's input)
  std::vector<LayerActivations> layers;
  float* lnf;        // [B,T,C] final norm output
  float* lnf_rstd;   // [B,T]
  float* logits;     // [head_rows, Vp] (fp32 path: overwritten by dlogits)
  float* dhead;      // [Vp, C] the lm head's weight gradient at unit dloss
  float* losses;     // [B,T]
  int32_t* tokens;   // [B,T]
  int32_t* targets;  // [B,T]
  // [T, HD/2] each: the model's RoPE tables, in a buffer of their own
  // (plan() does not place them: the activation buffer may be lent out
  // between passes, Module::lend_activation_memory, and must hold nothing
  // that outlives a pass).
  float* rope_cos = nullptr;
  float* rope_sin = nullptr;
  // Scratch, reused by every layer:
  float* ln;     // [B,T,C] a norm's output (forward; recomputed in the backward)
  float* qkv;    // [B,T,3C] packed, rotated attention input
  float* dqkv;   // [B,T,3C]
  float* dq;     // [B,T,C]
  float* dk;     // [B,T,KC]
  float* dv;     // [B,T,KC]
  float* proj;   // [B,T,C] o_proj / down_proj output before the residual add
  float* act;    // [B,T,I] silu(gate)·up
  float* dact;   // [B,T,I]
  float* dgate;  // [B,T,I]
  float* dup;    // [B,T,I]
  float* dres;   // [B,T,C] gradient of the residual stream
  float* dln;    // [B,T,C]
  float* datty;  // [B,T,C]
  BFloat16* qkv16 = nullptr;   // [B,T,3C] the bf16 path's rotated attention input
  BFloat16* dqkv16 = nullptr;  // [B,T,3C]
  int64_t head_rows = 0;

  // Binds the pointers into base (when not null) and returns the floats
  // needed for (B, T), every array 64-byte aligned. checkpoint: activation
  // checkpointing, every layer's arrays but its res3 shared with layer 0's;
  // bf16: the bf16 path's arrays instead of their fp32 forms.
  int64_t plan(const LlamaConfig& cfg, int64_t B, int64_t T, int64_t head_rows, bool checkpoint,
               bool bf16, float* base);
};

// Rows of one lm-head chunk: `requested` if > 0, else about 1 Mi floats of
// logits but at least 64 rows; never more than `rows`.
int64_t head_chunk_rows(const LlamaConfig& cfg, int64_t rows, int64_t requested);

}  // namespace zerotrain::model::llama
