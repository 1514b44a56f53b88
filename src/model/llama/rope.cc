// RoPE tables (see rope.h). fp32 arithmetic in HF's order, so the angles
// are the reference's bit for bit up to powf's last ulp.
#include "model/llama/rope.h"

#include <cmath>

namespace zerotrain::model::llama {

std::vector<float> rope_inv_freq(const LlamaConfig& cfg) {
  const int64_t HD = cfg.head_dim(), half = HD / 2;
  const float theta = static_cast<float>(cfg.rope_theta);
  std::vector<float> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    const float e = static_cast<float>(2 * i) / static_cast<float>(HD);
    inv[static_cast<size_t>(i)] = 1.0f / std::pow(theta, e);
  }
  const RopeScaling& s = cfg.rope_scaling;
  const float factor = static_cast<float>(s.factor);
  if (s.type == "linear") {
    for (float& f : inv) f /= factor;
  } else if (s.type == "llama3") {
    const float old_len = static_cast<float>(s.original_max_position_embeddings);
    const float lo = static_cast<float>(s.low_freq_factor);
    const float hi = static_cast<float>(s.high_freq_factor);
    const float low_freq_wavelen = old_len / lo, high_freq_wavelen = old_len / hi;
    for (float& f : inv) {
      const float wavelen = 2.0f * static_cast<float>(M_PI) / f;
      const float scaled = wavelen > low_freq_wavelen ? f / factor : f;  // low frequencies
      if (wavelen < high_freq_wavelen || wavelen > low_freq_wavelen) {
        f = scaled;  // high frequencies keep theirs
        continue;
      }
      const float smooth = (old_len / wavelen - lo) / (hi - lo);
      f = (1.0f - smooth) * scaled / factor + smooth * scaled;
    }
  }
  return inv;
}

RopeTables rope_tables(const LlamaConfig& cfg, int64_t T) {
  const std::vector<float> inv = rope_inv_freq(cfg);
  const size_t half = inv.size();
  RopeTables r;
  r.cos.resize(static_cast<size_t>(T) * half);
  r.sin.resize(r.cos.size());
  for (int64_t t = 0; t < T; ++t) {
    for (size_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(t) * inv[i];
      r.cos[static_cast<size_t>(t) * half + i] = static_cast<float>(std::cos(double{angle}));
      r.sin[static_cast<size_t>(t) * half + i] = static_cast<float>(std::sin(double{angle}));
    }
  }
  return r;
}

}  // namespace zerotrain::model::llama
