// LlamaActivations planning (see activations.h).
#include "model/llama/activations.h"

#include <algorithm>

namespace zerotrain::model::llama {

int64_t Activations::plan(const LlamaConfig& cfg, int64_t B, int64_t T, int64_t rows,
                          bool checkpoint, float* base) {
  const int64_t BT = B * T, C = cfg.hidden_size, KC = cfg.kv_dim(), I = cfg.intermediate_size,
                NH = cfg.num_heads, Vp = cfg.padded_vocab, half = cfg.head_dim() / 2;
  int64_t used = 0;
  auto take = [&](int64_t n) -> float* {
    float* p = base ? base + used : nullptr;
    used += (n + 15) / 16 * 16;  // 64-byte aligned
    return p;
  };
  auto take_int = [&](int64_t n) { return reinterpret_cast<int32_t*>(take(n)); };
  encoded = take(BT * C);
  layers.resize(static_cast<size_t>(cfg.num_layers));
  for (LayerActivations& a : layers) {
    if (checkpoint && &a != &layers.front()) {  // one shared set, its own output
      a = layers.front();
      a.res3 = take(BT * C);
      continue;
    }
    a.rstd1 = take(BT);
    a.q = take(BT * C);
    a.k = take(BT * KC);
    a.v = take(BT * KC);
    a.atty = take(BT * C);
    a.lse = take(B * NH * T);
    a.res2 = take(BT * C);
    a.rstd2 = take(BT);
    a.gate = take(BT * I);
    a.up = take(BT * I);
    a.res3 = take(BT * C);
  }
  lnf = take(BT * C);
  lnf_rstd = take(BT);
  head_rows = rows;
  logits = take(rows * Vp);
  dhead = take(Vp * C);
  losses = take(BT);
  tokens = take_int(BT);
  targets = take_int(BT);
  rope_cos = take(T * half);
  rope_sin = take(T * half);
  ln = take(BT * C);
  qkv = take(BT * 3 * C);
  dqkv = take(BT * 3 * C);
  dq = take(BT * C);
  dk = take(BT * KC);
  dv = take(BT * KC);
  proj = take(BT * C);
  act = take(BT * I);
  dact = take(BT * I);
  dgate = take(BT * I);
  dup = take(BT * I);
  dres = take(BT * C);
  dln = take(BT * C);
  datty = take(BT * C);
  return used;
}

int64_t head_chunk_rows(const LlamaConfig& cfg, int64_t rows, int64_t requested) {
  const int64_t target = (int64_t{1} << 20) / cfg.padded_vocab / 16 * 16;
  return std::min(rows, requested > 0 ? requested : std::max<int64_t>(64, target));
}

}  // namespace zerotrain::model::llama
