// Deterministic GPT-2 initialisation from a seed: weights normal(0, 0.02),
// residual projections (attn.c_proj, mlp.c_proj weights) normal(0,
// 0.02/sqrt(2·L)), layernorm weight 1 and bias 0, linear biases 0, the
// padded wte rows (V..Vp-1) and the alignment gaps 0.
//
// Each element's value is a pure function of (seed, tensor name, index in
// the tensor): a counter-based generator (splitmix64 of a counter, Box-
// Muller), so the result is bit-identical for any thread count, and any
// range of the flat buffer can be filled on its own (a ZeRO rank can
// initialise just its shard and get the same numbers as a full init).
//
//   init_parameters(layout, seed, params);  // params: layout.total_numel()
//   init_parameter_range(layout, seed, shard_begin, shard_end, shard);
//
// Threads: OpenMP over elements. Thread-safety: pure; distinct outputs may
// be filled concurrently.
#pragma once

#include <cstdint>
#include <string>

#include "model/init_normal.h"
#include "model/param_layout.h"

namespace zerotrain::model::gpt2 {

inline constexpr double kInitStd = 0.02;

// Fills out[0, end - begin) with elements [begin, end) of the flat buffer.
// 0 <= begin <= end <= layout.total_numel() (checked).
void init_parameter_range(const ParamLayout& layout, uint64_t seed, int64_t begin, int64_t end,
                          float* out);

// The whole buffer: init_parameter_range(layout, seed, 0, total_numel, params).
void init_parameters(const ParamLayout& layout, uint64_t seed, float* params);

}  // namespace zerotrain::model::gpt2
