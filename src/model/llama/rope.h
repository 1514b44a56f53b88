// The rotary embedding's cos/sin tables of a LlamaConfig, as Hugging Face
// computes them in fp32: inv_freq[i] = 1 / theta^(2i/HD), adjusted by
// rope_scaling (linear: / factor; llama3: the wavelength-banded rescaling
// of _compute_llama3_parameters), angle = float(t)·inv_freq[i] in fp32,
// and cos/sin of it rounded to fp32 — the tables device/cpu/kernels/rope.h
// reads, [T, HD/2] each.
//
//   RopeTables r = rope_tables(cfg, T);
//   ops.rope_pack_qkv(qkv, q, k, v, r.cos.data(), r.sin.data(), ...);
//
// Thread-safety: pure.
#pragma once

#include <cstdint>
#include <vector>

#include "model/llama/config.h"

namespace zerotrain::model::llama {

// inv_freq [HD/2] after rope_scaling.
std::vector<float> rope_inv_freq(const LlamaConfig& cfg);

struct RopeTables {
  std::vector<float> cos, sin;  // [T, HD/2]
};
RopeTables rope_tables(const LlamaConfig& cfg, int64_t T);

}  // namespace zerotrain::model::llama
