// Memory estimates for ZeRO model states (parameters, gradients, optimizer
// states): zerotrain's own accounting, which the engine reports, and
// DeepSpeed's estimator (estimate_zero2/3_model_states_mem_needs) for
// comparison. Pure functions; formatting lives in estimate_format.h.
//
//   ZeroSetup s{.params = 7'500'000'000, .world_size = 64};
//   StatusOr<MemoryEstimate> m = zerotrain_model_states(s, 3, /*offload=*/false);
//   // m->device_bytes == 16 * ceil(7.5e9 / 64) = 1.875e9 bytes
//
//   DeepSpeedSetup d{.total_params = p, .largest_layer_params = l};
//   MemoryEstimate z2 = deepspeed_zero2_estimate(d, /*offload_optimizer=*/true);
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "model/gpt_config.h"

namespace zerotrain::tools {

// Bytes of model state for one ZeRO configuration. device_bytes is per rank;
// host_bytes is per node (all ranks of the node together), as DeepSpeed's
// "per CPU" column; host_bytes_per_rank is one rank's share of it.
struct MemoryEstimate {
  int64_t device_bytes = 0;
  int64_t host_bytes = 0;
  int64_t host_bytes_per_rank = 0;
};

enum class TrainDtype { kBf16, kFp16, kFp32 };

// "bf16", "fp16", "fp32" (also "float32", "float16", "bfloat16"); InvalidArgument otherwise.
StatusOr<TrainDtype> parse_train_dtype(std::string_view name);
const char* train_dtype_name(TrainDtype dtype);

// Bytes per parameter of each model state. 16-bit training: 2 (16-bit
// params) + 2 (16-bit grads) + 12 (fp32 master, Adam m, v) = 16, the
// paper's K = 12. fp32 training keeps no separate master: 4 (fp32 params) +
// 4 (fp32 grads) + 8 (Adam m, v) = 16.
struct StateBytes {
  int64_t param = 0;
  int64_t grad = 0;
  int64_t optimizer = 0;
  int64_t total() const { return param + grad + optimizer; }
};
StateBytes state_bytes(TrainDtype dtype);


// Which storage the formulas count.
enum class StorageLayout {
  // DESIGN.md / the ZeRO paper: 16-bit params and grads (StateBytes above).
  kDesign,
  // What zerotrain's engine allocates (engine::MemoryReport without
  // buffers and activations). Stages 0-2 without offload: fp32 keeps
  // 4 params + 4 grads + 8 Adam (the params are the master; at stage 2 over
  // several reduce buckets + 4 master), the grads a partition at stage 2;
  // bf16/fp16 is the design layout. offload_optimizer
  // moves the fp32 master (a copy also for fp32), Adam and the optimizer's
  // gradient partition (fp32 at stage 1, the accumulator at stage 2) to the
  // host. Stage 3 stores the design layout (its fp32 params are the
  // master); its offload row is offload_param + offload_optimizer, which
  // moves all 16·P to the host; its persistent whole tensors (4 bytes each)
  // stay on the device either way.
  kEngine,
};
// "design", "engine"; InvalidArgument otherwise.
StatusOr<StorageLayout> parse_storage_layout(std::string_view name);
const char* storage_layout_name(StorageLayout layout);

struct ZeroSetup {
  int64_t params = 0;          // Ψ, elements of the flat parameter buffer
  int64_t world_size = 1;      // N, data-parallel ranks (all nodes)
  int64_t ranks_per_node = 1;  // for the per-node host total
  TrainDtype dtype = TrainDtype::kBf16;
  StorageLayout layout = StorageLayout::kDesign;
  // Stage 3, layout kEngine: elements of the tensors under
  // stage3_param_persistence_threshold, which every rank also keeps whole
  // in fp32 storage on the device (ModelCounts::stage3_persistent_numel).
  int64_t stage3_persistent_numel = 0;
  // Layout kEngine, fp32 stage 2: with more than one reduce bucket over Ψ
  // a rank owns a chunk of each (zero/shard_layout.h), not one slice of the
  // params, and keeps a separate fp32 master. DeepSpeed's default.
  int64_t reduce_bucket_size = 500'000'000;
};

// zerotrain's model-state bytes, stage 0..3, with P = ceil(Ψ/N). Layout
// kDesign, with the StateBytes (p, g, o) of the dtype (16-bit: 2, 2, 12):
//   stage 0: (p+g+o)Ψ               stage 1: (p+g)Ψ + o·P
//   stage 2: pΨ + (g+o)·P           stage 3: (p+g+o)·P
// offload moves the optimizer share o·P to host memory, and at stage 3 the
// parameter partition p·P too (the device keeps the gradient partition).
// Layout kEngine: as described at StorageLayout.
// Host bytes are 0 without offload (model states only). InvalidArgument for
// a stage outside 0..3, params < 1, world/ranks < 1, ranks_per_node not
// dividing world_size, or offload at stage 0 (offload needs stage >= 1, as
// in DeepSpeed).
//
// The engine must agree within 5% (tests/tools/engine_agreement_test.cc);
// its check is one call per configuration (engine::MemoryReport counts Ψ as
// the flat buffer, as here; buffers are not model states):
//   engine::MemoryReport r = engine.memory();
//   MemoryEstimate e = *zerotrain_model_states(
//       {.params = r.numel, .world_size = N, .dtype = d, .layout = StorageLayout::kEngine},
//       stage, offload);
//   r.model_states.total() - r.model_states.buffers   ~ e.device_bytes
//   r.host_model_states.total()                       ~ e.host_bytes_per_rank
StatusOr<MemoryEstimate> zerotrain_model_states(const ZeroSetup& setup, int stage, bool offload);

// DeepSpeed's estimator inputs (reference §3.5). Its formulas assume 16-bit
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

// Parameter counts of a GPT preset as each accounting sees them.
struct ModelCounts {
  int64_t hf_params = 0;         // parameter_count: what DeepSpeed sees on HF's model
  int64_t stored_params = 0;     // padded_parameter_count: padded vocabulary
  int64_t buffer_numel = 0;      // ParamLayout::total_numel: + alignment gaps (our Ψ)
  int64_t ds_largest_layer = 0;  // max over HF modules: V·C (wte), maxT·C, 4C²+4C (c_fc)
  std::string ds_largest_layer_name;
  int64_t largest_group = 0;  // our largest gather unit (a ParamLayout group)
  std::string largest_group_name;
  // Stage 3 keeps tensors under the persistence threshold whole on every
  // rank: their elements (alignment gaps included), as zero::Stage3Layout
  // counts them.
  int64_t stage3_persistent_numel = 0;
  // Layout kEngine, fp32 stage 2: with more than one reduce bucket over Ψ
  // a rank owns a chunk of each (zero/shard_layout.h), not one slice of the
  // params, and keeps a separate fp32 master. DeepSpeed's default.
  int64_t reduce_bucket_size = 500'000'000;
};
// stage3_persistence_threshold: zero_optimization.stage3_param_persistence_threshold.
inline constexpr int64_t kDefaultPersistenceThreshold = 100'000;  // DeepSpeed's default
ModelCounts model_counts(const model::GptConfig& cfg,
                         int64_t stage3_persistence_threshold = kDefaultPersistenceThreshold);

}  // namespace zerotrain::tools
