// The counter-based normal draws every family's initialisation uses: each
// element's value is a pure function of (seed, tensor name, index), so the
// result is bit-identical for any thread count and any range of the flat
// buffer can be filled on its own (a ZeRO rank initialises just its shard
// and gets the numbers of a full init).
//
//   const uint64_t h = fnv1a(t.name);
//   out[i] = static_cast<float>(std * init_normal(seed, h, i));
//   init_flat_range(layout, seed, begin, end, out, [](const TensorInfo&) { return 0.02; });
//
// Thread-safety: pure.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "model/param_layout.h"

namespace zerotrain::model {

// The standard normal draw for element `index` of the tensor whose name
// hashes to name_hash: splitmix64 at counters 2i+1, 2i+2, Box-Muller.
double init_normal(uint64_t seed, uint64_t name_hash, uint64_t index);
uint64_t fnv1a(const std::string& s);

// Fills out[0, end - begin) with elements [begin, end) of a flat parameter
// buffer: norm weights (kLayerNormWeight) 1, every other tensor normal(0,
// std_of(t)) (0: zeros), rows past HF's shape (a padded vocabulary) and
// alignment gaps 0. 0 <= begin <= end <= layout.total_numel() (checked).
// Threads: OpenMP over elements.
void init_flat_range(const ParamLayout& layout, uint64_t seed, int64_t begin, int64_t end,
                     float* out, const std::function<double(const TensorInfo&)>& std_of);

}  // namespace zerotrain::model
