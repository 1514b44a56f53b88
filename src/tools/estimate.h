// Memory estimates for ZeRO model states: DeepSpeed's estimator
// (estimate_zero2/3_model_states_mem_needs), to compare with zerotrain's own
// accounting (zero/memory_model.h, which the engine reports), and the
// parameter counts of a model as each sees them. Pure functions;
// formatting lives in estimate_format.h.
//
//   ModelCounts c = model_counts(layout);
//   DeepSpeedSetup d{.total_params = c.hf_params, .largest_layer_params = c.ds_largest_layer};
//   MemoryEstimate z2 = deepspeed_zero2_estimate(d, /*offload_optimizer=*/true);
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "model/param_layout.h"
#include "zero/memory_model.h"

namespace zerotrain::tools {

// zerotrain's own formulas are zero/memory_model.h (the one memory model
// the engine, the strategies and this tool share).
using MemoryEstimate = zero::ModelStateEstimate;
using zero::StorageLayout;

// DeepSpeed's estimator inputs (its runtime/zero/stage_1_and_2.py
// and stage3.py estimate_* functions). Its formulas assume 16-bit
// training whatever the dtype.
struct DeepSpeedSetup {
  int64_t total_params = 0;          // P, unique by storage
  int64_t largest_layer_params = 0;  // L, largest module's parameters(recurse=False)
  int64_t gpus_per_node = 1;
  int64_t nodes = 1;
  double additional_buffer_factor = 1.5;
};

// estimate_zero2_model_states_mem_needs (stages 1 and 2), G = gpus:
//   offload_optimizer=cpu: GPU 2P, CPU P·max(4G, 16)·abf
//   none:                  GPU 2P + int(18P/G), CPU 4P·gpn·abf
MemoryEstimate deepspeed_zero2_estimate(const DeepSpeedSetup& setup, bool offload_optimizer);

// estimate_zero3_model_states_mem_needs, LL = 4L, gf = 1/nodes:
//   param+optimizer offload: GPU LL,              CPU 18P·gf·abf | P·max(4gpn, 18gf)·abf
//   optimizer offload:       GPU LL + int(2P/G),  CPU 16P·gf·abf | P·max(4gpn, 16gf)·abf
//   none:                    GPU LL + int(18P/G), CPU 4L·gpn·abf | 4P·gpn·abf
// (CPU: zero_init=1 | zero_init=0). offload_param without
// offload_optimizer is not a DeepSpeed option: treated as both.
MemoryEstimate deepspeed_zero3_estimate(const DeepSpeedSetup& setup, bool offload_optimizer,
                                        bool offload_param, bool zero_init);

// Parameter counts of a model as each accounting sees them, from its
// ParamLayout (any family).
struct ModelCounts {
  int64_t hf_params = 0;         // Σ HF numel: what DeepSpeed sees on HF's model (tied once)
  int64_t stored_params = 0;     // Σ our numel: a padded vocabulary counts its padding
  int64_t buffer_numel = 0;      // ParamLayout::total_numel: + alignment gaps (our Ψ)
  // DeepSpeed's L: the largest HF module's parameters(recurse=False) — a
  // module being the tensors sharing a name up to its last dot (e.g.
  // "h.0.mlp.c_fc"), named without its layer prefix ("mlp.c_fc").
  int64_t ds_largest_layer = 0;
  std::string ds_largest_layer_name;
  int64_t largest_group = 0;  // our largest gather unit (a ParamLayout group)
  std::string largest_group_name;
  // Stage 3 keeps tensors under the persistence threshold whole on every
  // rank: their elements (alignment gaps included), as zero::Stage3Layout
  // counts them.
  int64_t stage3_persistent_numel = 0;
};

// stage3_persistence_threshold: zero_optimization.stage3_param_persistence_threshold.
inline constexpr int64_t kDefaultPersistenceThreshold = 100'000;  // DeepSpeed's default
ModelCounts model_counts(const model::ParamLayout& layout,
                         int64_t stage3_persistence_threshold = kDefaultPersistenceThreshold);

}  // namespace zerotrain::tools
