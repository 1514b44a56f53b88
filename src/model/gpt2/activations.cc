// Activations::plan: one pass that both sizes and binds the arrays.
#include "model/gpt2/activations.h"

namespace zerotrain::model::gpt2 {

int64_t Activations::plan(const GptConfig& cfg, int64_t B, int64_t T, bool att_lse,
                          int64_t head_rows_, bool bf16, bool checkpoint, float* base) {
  const int64_t BT = B * T, C = cfg.n_embd;
  int64_t next = 0;
  auto take = [&](float** p, int64_t n) {
    *p = base != nullptr ? base + next : nullptr;
    next += (n + 15) / 16 * 16;  // keep every array on its own 64-byte line
  };
  // n bf16 elements in (n + 1) / 2 floats' room.
  auto take16 = [&](BFloat16** p, int64_t n) {
    float* at = nullptr;
    take(&at, (n + 1) / 2);
    *p = reinterpret_cast<BFloat16*>(at);
  };
  take(&encoded, BT * C);
  layers.resize(static_cast<size_t>(cfg.n_layer));
  for (LayerActivations& l : layers) {
    if (checkpoint && &l != &layers.front()) {  // one shared set, its own output
      l = layers.front();
      take(&l.res3, BT * C);
      continue;
    }
    take(&l.ln1_mean, BT);
    take(&l.ln1_rstd, BT);
    if (bf16) {
      l.qkv = l.atty = nullptr;
      take16(&l.qkv16, BT * 3 * C);
      take16(&l.atty16, BT * C);
    } else {
      take(&l.qkv, BT * 3 * C);
      take(&l.atty, BT * C);
    }
    take(&l.att, B * cfg.n_head * T * (att_lse ? 1 : T));
    take(&l.res2, BT * C);
    take(&l.ln2_mean, BT);
    take(&l.ln2_rstd, BT);
    if (bf16) {
      l.fch = nullptr;
      take16(&l.fch16, BT * 4 * C);
    } else {
      take(&l.fch, BT * 4 * C);
    }
    take(&l.res3, BT * C);
  }
  take(&lnf, BT * C);
  take(&lnf_mean, BT);
  take(&lnf_rstd, BT);
  head_rows = head_rows_;
  take(&logits, head_rows * cfg.padded_vocab);
  take(&dwte, cfg.padded_vocab * C);
  take(&losses, BT);
  // Token ids and targets as int32 in float-sized slots.
  static_assert(sizeof(int32_t) == sizeof(float));
  auto take_ids = [&](int32_t** p) {
    float* at = nullptr;
    take(&at, BT);
    *p = reinterpret_cast<int32_t*>(at);
  };
  take_ids(&tokens);
  take_ids(&targets);
  take(&proj, BT * C);
  if (bf16) {
    ln = fch_gelu = nullptr;
  } else {
    take(&ln, BT * C);
    take(&fch_gelu, BT * 4 * C);
  }
  take(&dres, BT * C);
  take(&dln, BT * C);
  if (bf16) {
    datty = dqkv = nullptr;  // in bf16 only, in the operand scratch
  } else {
    take(&datty, BT * C);
    take(&dqkv, BT * 3 * C);
  }
  take(&dfch_gelu, BT * 4 * C);
  return next;
}

}  // namespace zerotrain::model::gpt2
