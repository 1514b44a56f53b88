// Model-state memory formulas: zerotrain's accounting and DeepSpeed's
// estimator (see estimate.h for the formulas and reference §3.5).
#include "tools/estimate.h"

#include <algorithm>
#include <utility>

#include "model/param_layout.h"
#include "zero/stage3_layout.h"
#include "core/range.h"

namespace zerotrain::tools {

StatusOr<TrainDtype> parse_train_dtype(std::string_view name) {
  if (name == "bf16" || name == "bfloat16") return TrainDtype::kBf16;
  if (name == "fp16" || name == "float16") return TrainDtype::kFp16;
  if (name == "fp32" || name == "float32") return TrainDtype::kFp32;
  return invalid_argument("dtype: expected bf16, fp16 or fp32, got '" + std::string(name) + "'");
}

const char* train_dtype_name(TrainDtype dtype) {
  switch (dtype) {
    case TrainDtype::kBf16:
      return "bf16";
    case TrainDtype::kFp16:
      return "fp16";
    case TrainDtype::kFp32:
      return "fp32";
  }
  return "?";
}

StateBytes state_bytes(TrainDtype dtype) {
  if (dtype == TrainDtype::kFp32) return StateBytes{.param = 4, .grad = 4, .optimizer = 8};
  return StateBytes{.param = 2, .grad = 2, .optimizer = 12};
}

StatusOr<StorageLayout> parse_storage_layout(std::string_view name) {
  if (name == "design") return StorageLayout::kDesign;
  if (name == "engine") return StorageLayout::kEngine;
  return invalid_argument("layout: expected design or engine, got '" + std::string(name) + "'");
}

const char* storage_layout_name(StorageLayout layout) {
  return layout == StorageLayout::kEngine ? "engine" : "design";
}

namespace {

Status validate_setup(const ZeroSetup& s, int stage, bool offload) {
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
std::pair<int64_t, int64_t> engine_stage012(const ZeroSetup& s, int stage, bool offload) {
  const int64_t full = s.params;
  const int64_t part = shard_size(s.params, static_cast<int>(s.world_size));
  const bool fp32 = s.dtype == TrainDtype::kFp32;
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

StatusOr<MemoryEstimate> zerotrain_model_states(const ZeroSetup& s, int stage, bool offload) {
  ZT_RETURN_IF_ERROR(validate_setup(s, stage, offload));
  const int64_t full = s.params;
  const int64_t part = shard_size(s.params, static_cast<int>(s.world_size));
  if (s.layout == StorageLayout::kEngine && (stage < 3 || offload)) {
    // Stage 3 with offload: everything (16·P) on the host.
    auto [device, host] = stage < 3 ? engine_stage012(s, stage, offload)
                                    : std::pair<int64_t, int64_t>{0, 16 * part};
    if (stage == 3) device += 4 * s.stage3_persistent_numel;
    return MemoryEstimate{
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
  return MemoryEstimate{
      .device_bytes = device, .host_bytes = host * s.ranks_per_node, .host_bytes_per_rank = host};
}

namespace {

// Python's int() of a non-negative float: truncation.
int64_t py_int(double v) { return static_cast<int64_t>(v); }

MemoryEstimate ds_result(double cpu, int64_t gpu, int64_t gpus_per_node) {
  const int64_t cpu_bytes = py_int(cpu);
  return MemoryEstimate{.device_bytes = gpu,
                        .host_bytes = cpu_bytes,
                        .host_bytes_per_rank = cpu_bytes / std::max<int64_t>(gpus_per_node, 1)};
}

}  // namespace

MemoryEstimate deepspeed_zero2_estimate(const DeepSpeedSetup& s, bool offload_optimizer) {
  const int64_t p = s.total_params;
  const int64_t gpus = s.nodes * s.gpus_per_node;
  const double abf = s.additional_buffer_factor;
  // Same evaluation order as stage_1_and_2.py: integer products, then * abf.
  if (offload_optimizer)
    return ds_result(static_cast<double>(p * std::max<int64_t>(4 * gpus, 16)) * abf, 2 * p,
                     s.gpus_per_node);
  const int64_t gpu = 2 * p + py_int(18.0 * static_cast<double>(p) / static_cast<double>(gpus));
  return ds_result(static_cast<double>(p * 4 * s.gpus_per_node) * abf, gpu, s.gpus_per_node);
}

MemoryEstimate deepspeed_zero3_estimate(const DeepSpeedSetup& s, bool offload_optimizer,
                                        bool offload_param, bool zero_init) {
  const double p = static_cast<double>(s.total_params);
  const int64_t gpus = s.nodes * s.gpus_per_node;
  const double gf = 1.0 / static_cast<double>(s.nodes);
  const double abf = s.additional_buffer_factor;
  const double gpn4 = 4.0 * static_cast<double>(s.gpus_per_node);
  const int64_t ll = 4 * s.largest_layer_params;
  if (offload_optimizer || offload_param) {
    if (offload_param) {
      const double cpu = zero_init ? p * 18 * gf * abf : p * std::max(gpn4, 18 * gf) * abf;
      return ds_result(cpu, ll, s.gpus_per_node);
    }
    const double cpu = zero_init ? p * 16 * gf * abf : p * std::max(gpn4, 16 * gf) * abf;
    return ds_result(cpu, ll + py_int(2 * p / static_cast<double>(gpus)), s.gpus_per_node);
  }
  const double cpu =
      zero_init ? static_cast<double>(s.largest_layer_params) * gpn4 * abf : p * gpn4 * abf;
  return ds_result(cpu, ll + py_int(18 * p / static_cast<double>(gpus)), s.gpus_per_node);
}

ModelCounts model_counts(const model::GptConfig& cfg, int64_t stage3_persistence_threshold) {
  ModelCounts c;
  c.stage3_persistent_numel =
      zero::Stage3Layout(model::ParamLayout(cfg), 1, 0, stage3_persistence_threshold)
          .persistent_numel();
  c.hf_params = model::parameter_count(cfg);
  c.stored_params = model::padded_parameter_count(cfg);
  const model::ParamLayout layout(cfg);
  c.buffer_numel = layout.total_numel();
  for (const model::GroupInfo& g : layout.groups()) {
    if (g.numel > c.largest_group) {
      c.largest_group = g.numel;
      c.largest_group_name = g.name;
    }
  }
  // HF GPT2LMHeadModel modules, parameters(recurse=False): the embeddings
  // and the widest Conv1D (mlp.c_fc: [C, 4C] weight + 4C bias).
  const int64_t C = cfg.n_embd;
  const std::pair<int64_t, const char*> candidates[] = {
      {cfg.vocab_size * C, "wte"}, {cfg.seq_len * C, "wpe"}, {4 * C * C + 4 * C, "mlp.c_fc"}};
  for (const auto& [n, name] : candidates) {
    if (n > c.ds_largest_layer) {
      c.ds_largest_layer = n;
      c.ds_largest_layer_name = name;
    }
  }
  return c;
}

}  // namespace zerotrain::tools
