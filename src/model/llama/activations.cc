// LlamaActivations planning (see activations.h).
#include "model/llama/activations.h"

#include <algorithm>

namespace zerotrain::model::llama {

int64_t Activations::plan(const LlamaConfig& cfg, int64_t B, int64_t T, int64_t rows,
                          bool checkpoint, bool bf16, float* base) {
  const int64_t BT = B * T, C = cfg.hidden_size, KC = cfg.kv_dim(), I = cfg.intermediate_size,
                NH = cfg.num_heads, Vp = cfg.padded_vocab;
  int64_t used = 0;
  auto take = [&](int64_t n) -> float* {
    float* p = base ? base + used : nullptr;
    used += (n + 15) / 16 * 16;  // 64-byte aligned
    return p;
  };
  auto take_int = [&](int64_t n) { return reinterpret_cast<int32_t*>(take(n)); };
  auto take16 = [&](int64_t n) { return reinterpret_cast<BFloat16*>(take((n + 1) / 2)); };
  // An fp32 array only on the fp32 path (null on the bf16 path).
  auto take32 = [&](int64_t n) { return bf16 ? nullptr : take(n); };
  encoded = take(BT * C);
  layers.resize(static_cast<size_t>(cfg.num_layers));
  for (LayerActivations& a : layers) {
    if (checkpoint && &a != &layers.front()) {  // one shared set, its own output
      a = layers.front();
      a.res3 = take(BT * C);
      continue;
    }
    a.rstd1 = take(BT);
    a.q = take32(BT * C);
    a.k = take32(BT * KC);
    a.v = take32(BT * KC);
    a.atty = take32(BT * C);
    a.lse = take(B * NH * T);
    a.res2 = take(BT * C);
    a.rstd2 = take(BT);
    a.gate = take32(BT * I);
    a.up = take32(BT * I);
    a.res3 = take(BT * C);
    if (bf16) {
      a.q16 = take16(BT * C);
      a.k16 = take16(BT * KC);
      a.v16 = take16(BT * KC);
      a.atty16 = take16(BT * C);
      a.gate16 = take16(BT * I);
      a.up16 = take16(BT * I);
    }
  }
  lnf = take(BT * C);
  lnf_rstd = take(BT);
  head_rows = rows;
  logits = take(rows * Vp);
  dhead = take(Vp * C);
  losses = take(BT);
  tokens = take_int(BT);
  targets = take_int(BT);
  ln = take32(BT * C);
  qkv = take32(BT * 3 * C);
  dqkv = take32(BT * 3 * C);
  dq = take32(BT * C);
  dk = take32(BT * KC);
  dv = take32(BT * KC);
  proj = take(BT * C);
  act = take32(BT * I);
  dact = take(BT * I);
  dgate = take32(BT * I);
  dup = take32(BT * I);
  dres = take(BT * C);
  dln = take(BT * C);
  datty = take32(BT * C);
  if (bf16) {
    qkv16 = take16(BT * 3 * C);
    dqkv16 = take16(BT * 3 * C);
  }
  return used;
}

int64_t head_chunk_rows(const LlamaConfig& cfg, int64_t rows, int64_t requested) {
  const int64_t target = (int64_t{1} << 20) / cfg.padded_vocab / 16 * 16;
  return std::min(rows, requested > 0 ? requested : std::max<int64_t>(64, target));
}

}  // namespace zerotrain::model::llama
