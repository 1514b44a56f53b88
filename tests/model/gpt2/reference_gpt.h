// Test helpers for model/: a double-precision GPT-2 forward written from the
// formulas (the kernels' reference ops, no src/model or src/kernels code),
// reading parameters from a flat buffer through a ParamLayout, a micro
// config small enough for whole-model finite differences, and a plain SGD
// loop.
//
//   Vec flat = to_double(params);
//   double loss = reference_loss(cfg, layout, flat, tokens, targets, B, T);
//
// Thread-safety: test code, single-threaded.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "device/cpu/kernels/reference.h"
#include "model/gpt2/config.h"
#include "model/gpt2/gpt_model.h"
#include "model/param_layout.h"

namespace zerotrain::model::gpt2::testing {

using device::cpu::testing::Vec;
namespace ref = device::cpu::testing::ref;

// 2 layers, C=16, NH=2, V=23 padded to 32, block size 8 (tests use T=5 <
// 8, so the unused wpe rows are exercised as zero-gradient rows).
inline GptConfig micro_config() {
  return {
      .n_layer = 2, .n_head = 2, .n_embd = 16, .seq_len = 8, .vocab_size = 23, .padded_vocab = 32};
}

inline Vec slice(const Vec& flat, const TensorInfo& t) {
  return Vec(flat.begin() + t.offset, flat.begin() + t.offset + t.numel);
}

// Mean cross-entropy over targets >= 0, in double.
inline double reference_loss(const GptConfig& cfg, const ParamLayout& layout, const Vec& flat,
                             const std::vector<int32_t>& tokens,
                             const std::vector<int32_t>& targets, int B, int T) {
  const int C = static_cast<int>(cfg.n_embd), rows = B * T;
  const int V = static_cast<int>(cfg.vocab_size), Vp = static_cast<int>(cfg.padded_vocab);
  auto w = [&](const std::string& name) { return slice(flat, layout.tensor(name)); };
  const Vec wte = w("wte.weight");
  Vec x = ref::encoder(tokens, wte, w("wpe.weight"), B, T, C);
  for (int l = 0; l < cfg.n_layer; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    Vec ln1 = ref::layernorm(x, w(h + "ln_1.weight"), w(h + "ln_1.bias"), rows, C);
    Vec qkv =
        ref::linear(ln1, w(h + "attn.c_attn.weight"), w(h + "attn.c_attn.bias"), rows, C, 3 * C);
    Vec att = ref::attention(qkv, B, T, C, static_cast<int>(cfg.n_head));
    Vec proj = ref::linear(att, w(h + "attn.c_proj.weight"), w(h + "attn.c_proj.bias"), rows, C, C);
    x = ref::residual(x, proj);
    Vec ln2 = ref::layernorm(x, w(h + "ln_2.weight"), w(h + "ln_2.bias"), rows, C);
    Vec fc = ref::gelu(
        ref::linear(ln2, w(h + "mlp.c_fc.weight"), w(h + "mlp.c_fc.bias"), rows, C, 4 * C));
    Vec fcproj =
        ref::linear(fc, w(h + "mlp.c_proj.weight"), w(h + "mlp.c_proj.bias"), rows, 4 * C, C);
    x = ref::residual(x, fcproj);
  }
  Vec lnf = ref::layernorm(x, w("ln_f.weight"), w("ln_f.bias"), rows, C);
  Vec logits = ref::linear(lnf, wte, {}, rows, C, Vp);
  Vec losses = ref::crossentropy(logits, targets, rows, V, Vp);
  double sum = 0;
  int n = 0;
  for (int r = 0; r < rows; ++r) {
    if (targets[r] >= 0) sum += losses[r], ++n;
  }
  return n > 0 ? sum / n : 0.0;
}

// Deterministic token ids in [0, V).
inline std::vector<int32_t> random_tokens(int n, int V, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> d(0, V - 1);
  std::vector<int32_t> v(n);
  for (int32_t& t : v) t = d(gen);
  return v;
}

// `steps` of plain SGD (zero grads, forward, backward, p -= lr·g) on one
// fixed batch; the loss of each step. Aborts on a failed pass.
inline std::vector<float> train_sgd(GptModel& m, const std::vector<int32_t>& tokens,
                                    const std::vector<int32_t>& targets, int B, int T, int steps,
                                    float lr) {
  std::vector<float> losses;
  const int64_t n = m.layout().total_numel();
  for (int step = 0; step < steps; ++step) {
    m.zero_gradients();
    StatusOr<float> loss = m.forward(tokens.data(), targets.data(), B, T);
    ZT_CHECK(loss.ok(), loss.status().to_string());
    ZT_CHECK(m.backward().ok(), "backward failed");
    losses.push_back(*loss);
    for (int64_t i = 0; i < n; ++i) m.parameters()[i] -= lr * m.gradients()[i];
  }
  return losses;
}

}  // namespace zerotrain::model::gpt2::testing
