// ZeRO's memory model (see memory_model.h).
#include "zero/memory_model.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/range.h"

namespace zerotrain::zero {

int64_t zero_formula_bytes(int stage, int64_t numel, int world_size) {
  const int64_t n = std::max(1, world_size);
  auto per_rank = [&](int64_t bytes_per_element) {
    return (bytes_per_element * numel + n - 1) / n;
  };
  switch (stage) {
    case 0:
      return 16 * numel;
    case 1:
      return 4 * numel + per_rank(12);
    case 2:
      return 2 * numel + per_rank(14);
    default:
      return per_rank(16);
  }
}

StatusOr<StorageLayout> parse_storage_layout(std::string_view name) {
  if (name == "design") return StorageLayout::kDesign;
  if (name == "engine") return StorageLayout::kEngine;
  return invalid_argument("layout: expected design or engine, got '" + std::string(name) + "'");
}

const char* storage_layout_name(StorageLayout layout) {
  return layout == StorageLayout::kEngine ? "engine" : "design";
}

StateBytes state_bytes(DType dtype) {
  if (dtype == DType::kFloat32) return StateBytes{.param = 4, .grad = 4, .optimizer = 8};
  return StateBytes{.param = 2, .grad = 2, .optimizer = 12};
}

namespace {

Status validate_setup(const ModelStateSetup& s, int stage, bool offload) {
  if (stage < 0 || stage > 3)
    return invalid_argument("stage: expected 0, 1, 2 or 3, got " + std::to_string(stage));
  if (s.params < 1)
    return invalid_argument("params: must be >= 1, got " + std::to_string(s.params));
  if (s.world_size < 1 || s.ranks_per_node < 1)
    return invalid_argument("world_size and ranks_per_node must be >= 1");
  if (s.world_size % s.ranks_per_node != 0)
    return invalid_argument("world_size " + std::to_string(s.world_size) +
                            " is not a multiple of ranks_per_node " +
                            std::to_string(s.ranks_per_node));
  if (stage == 0 && offload)
    return invalid_argument("offload needs ZeRO stage 1, 2 or 3 (stage 0 replicates everything)");
  return ok_status();
}

// StorageLayout::kEngine for stages 0-2 (see estimate.h): {device, host}
// bytes of one rank.
std::pair<int64_t, int64_t> engine_stage012(const ModelStateSetup& s, int stage, bool offload) {
  const int64_t full = s.params;
  const int64_t part = shard_size(s.params, static_cast<int>(s.world_size));
  const bool fp32 = s.dtype == DType::kFloat32;
  const int64_t p = fp32 ? 4 : 2;  // the compute copy and its gradients
  if (offload) {
    // Master + Adam + the optimizer's gradient partition on the host:
    // stage 1's fp32 copy of the reduced slice, stage 2's accumulator.
    const int64_t host_grad = stage == 1 ? 4 : p;
    return {p * full + (stage == 1 ? p * full : 0), (4 + 8 + host_grad) * part};
  }
  const int64_t grad_n = stage == 2 ? part : full;
  const int64_t opt_n = stage >= 1 ? part : full;
  // fp32 stages 0-1: the params' own slice is the master; stage 2 owns a
  // chunk of every reduce bucket of N·S elements (S = the bucket's per-rank
  // share, at most P; one slice only when one bucket spans Ψ or N is 1)
  // and then keeps a master copy.
  const int64_t per_rank = std::clamp<int64_t>(s.reduce_bucket_size / s.world_size, 1, part);
  const bool one_slice = s.world_size == 1 || per_rank * s.world_size >= full;
  const bool aliased_master = fp32 && (stage < 2 || one_slice);
  return {p * full + p * grad_n + (aliased_master ? 8 : 12) * opt_n, 0};
}

}  // namespace

StatusOr<ModelStateEstimate> model_state_bytes(const ModelStateSetup& s, int stage, bool offload) {
  ZT_RETURN_IF_ERROR(validate_setup(s, stage, offload));
  const int64_t full = s.params;
  const int64_t part = shard_size(s.params, static_cast<int>(s.world_size));
  if (s.layout == StorageLayout::kEngine && (stage < 3 || offload)) {
    // Stage 3 with offload: everything (16·P) on the host.
    auto [device, host] =
        stage < 3 ? engine_stage012(s, stage, offload) : std::pair<int64_t, int64_t>{0, 16 * part};
    if (stage == 3) device += 4 * s.stage3_persistent_numel;
    return ModelStateEstimate{
        .device_bytes = device, .host_bytes = host * s.ranks_per_node, .host_bytes_per_rank = host};
  }
  const StateBytes b = state_bytes(s.dtype);
  // Elements each state keeps on a rank: whole (full) or one partition.
  const int64_t param_n = stage == 3 ? part : full;
  const int64_t grad_n = stage >= 2 ? part : full;
  const int64_t opt_n = stage >= 1 ? part : full;

  int64_t device = b.param * param_n + b.grad * grad_n + b.optimizer * opt_n;
  if (stage == 3 && s.layout == StorageLayout::kEngine) device += 4 * s.stage3_persistent_numel;
  int64_t host = 0;
  if (offload) {
    host = b.optimizer * opt_n;
    if (stage == 3) host += b.param * param_n;
    device -= host;
  }
  return ModelStateEstimate{
      .device_bytes = device, .host_bytes = host * s.ranks_per_node, .host_bytes_per_rank = host};
}

std::string capacity_advice(const ModelStateSetup& setup, int64_t activation_bytes,
                            int64_t capacity) {
  ModelStateSetup s = setup;
  s.layout = StorageLayout::kEngine;
  std::string rows, fits;
  const auto mib = [](int64_t b) { return std::to_string((b + (1 << 19)) >> 20) + " MiB"; };
  for (int stage = 0; stage <= 3; ++stage)
    for (bool offload : {false, true}) {
      if (stage == 0 && offload) continue;
      StatusOr<ModelStateEstimate> e = model_state_bytes(s, stage, offload);
      if (!e.ok()) continue;
      const int64_t need = e->device_bytes + activation_bytes;
      const std::string name =
          "stage " + std::to_string(stage) +
          (offload ? (stage == 3 ? " + offload_param/offload_optimizer" : " + offload_optimizer")
                   : "");
      rows += (rows.empty() ? "" : ", ") + name + " " + mib(need);
      if (fits.empty() && capacity > 0 && need <= capacity) fits = name;
    }
  std::string m = "zerotrain estimate for this model (" + std::to_string(setup.params) +
                  " parameters, " + std::to_string(setup.world_size) + " rank(s), " +
                  std::string(dtype_name(setup.dtype)) + ") needs per rank on the device, " +
                  "model states + " + mib(activation_bytes) + " of activations: " + rows;
  if (!fits.empty()) return m + "; the first that fits: " + fits;
  return m + "; none fits: add ranks (states shard over them) or reduce the batch";
}

}  // namespace zerotrain::zero
