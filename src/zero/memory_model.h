// ZeRO's memory model: the bytes of model states a rank holds for a stage,
// world size, dtype and offload setting — the one model the strategies,
// the engine's report, the device's out-of-memory advice and `zerotrain
// estimate` all use. Two storage layouts:
//   kDesign: the ZeRO paper (docs/architecture.md): 16-bit params and grads, fp32
//            master and Adam (K = 12): stage 0 16Ψ, 1 4Ψ + 12Ψ/N,
//            2 2Ψ + 14Ψ/N, 3 16Ψ/N; offload moves the optimizer share
//            (and at stage 3 the parameters) to the host.
//   kEngine: what zerotrain's strategies allocate (ModelStateBytes without
//            buffers). Stages 0-2 without offload: fp32 keeps 4 params + 4
//            grads + 8 Adam (the params are the master; at stage 2 over
//            several reduce buckets + 4 master), the grads a partition at
//            stage 2; bf16/fp16 is the design layout. offload_optimizer
//            moves the fp32 master (a copy also for fp32), Adam and the
//            optimizer's gradient partition (fp32 at stage 1, the
//            accumulator at stage 2) to the host. Stage 3 stores the design
//            layout (its fp32 params are the master); its offload row is
//            offload_param + offload_optimizer, which moves all 16·P to the
//            host; its persistent whole tensors (4 bytes each) stay on the
//            device either way.
// With P = ceil(Ψ/N) and the dtype's bytes (p, g, o) = (2, 2, 12) for
// 16-bit, (4, 4, 8) for fp32 (no separate master):
//   stage 0: (p+g+o)Ψ      stage 1: (p+g)Ψ + o·P
//   stage 2: pΨ + (g+o)·P  stage 3: (p+g+o)·P
//
//   ModelStateSetup s{.params = psi, .world_size = 4, .dtype = DType::kBFloat16};
//   ZT_ASSIGN_OR_RETURN(ModelStateEstimate e, model_state_bytes(s, /*stage=*/3, /*offload=*/true));
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/dtype.h"
#include "core/status.h"

namespace zerotrain::zero {

// Bytes of model states a rank holds, each category exactly what is
// allocated for it (ZeroStrategy::model_state_bytes).
struct ModelStateBytes {
  int64_t parameters = 0;        // the model's compute copy
  int64_t gradients = 0;         // persistent gradients (stage 0/1: the model's buffer;
                                 // stage 2: the own partition's accumulator)
  int64_t master_weights = 0;    // fp32 master copy; 0 when it is the compute copy (fp32)
  int64_t optimizer_states = 0;  // Adam: m and v
  // Reused staging that holds no state between micro-steps: the
  // communication buckets, and for stage 2 the model's full gradient buffer
  // that each backward writes into and the reduction empties again.
  int64_t buffers = 0;
  int64_t total() const {
    return parameters + gradients + master_weights + optimizer_states + buffers;
  }
};

// The per-rank model-state bytes (docs/architecture.md) for Adam (K = 12) over Ψ = numel
// elements and N ranks: stage 0 16Ψ, 1 4Ψ + 12Ψ/N, 2 2Ψ + 14Ψ/N, 3 16Ψ/N
// (divisions rounded up).
int64_t zero_formula_bytes(int stage, int64_t numel, int world_size);

enum class StorageLayout { kDesign, kEngine };
// "design", "engine"; InvalidArgument otherwise.
StatusOr<StorageLayout> parse_storage_layout(std::string_view name);
const char* storage_layout_name(StorageLayout layout);

// Bytes per parameter of each state in the design layout: 16-bit 2 + 2 +
// 12; fp32 4 + 4 + 8.
struct StateBytes {
  int64_t param = 0;
  int64_t grad = 0;
  int64_t optimizer = 0;
  int64_t total() const { return param + grad + optimizer; }
};
StateBytes state_bytes(DType dtype);

struct ModelStateSetup {
  int64_t params = 0;          // Ψ, elements of the flat parameter buffer
  int64_t world_size = 1;      // N, data-parallel ranks (all nodes)
  int64_t ranks_per_node = 1;  // for the per-node host total
  DType dtype = DType::kBFloat16;
  StorageLayout layout = StorageLayout::kDesign;
  // Stage 3, kEngine: elements of the tensors under
  // stage3_param_persistence_threshold, which every rank also keeps whole
  // in fp32 on the device (Stage3Layout::persistent_numel).
  int64_t stage3_persistent_numel = 0;
  // kEngine, fp32 stage 2: with more than one reduce bucket over Ψ a rank
  // owns a chunk of each (shard_layout.h) and keeps a separate fp32 master.
  int64_t reduce_bucket_size = 500'000'000;
};

// device_bytes per rank; host_bytes per node (all its ranks, DeepSpeed's
// "per CPU" column); host_bytes_per_rank one rank's share.
struct ModelStateEstimate {
  int64_t device_bytes = 0;
  int64_t host_bytes = 0;
  int64_t host_bytes_per_rank = 0;
};

// The formulas above. InvalidArgument for a stage outside 0..3, params < 1,
// world/ranks < 1, ranks_per_node not dividing world_size, or offload at
// stage 0.
StatusOr<ModelStateEstimate> model_state_bytes(const ModelStateSetup& setup, int stage,
                                               bool offload);

// What `zerotrain estimate` says about fitting this model into a device of
// `capacity` bytes (kEngine layout, every stage without and with offload,
// plus `activation_bytes`): the advice a device's out-of-memory error
// carries (Device::set_oom_advice). setup.world_size etc. as the run has them.
std::string capacity_advice(const ModelStateSetup& setup, int64_t activation_bytes,
                            int64_t capacity);

}  // namespace zerotrain::zero
