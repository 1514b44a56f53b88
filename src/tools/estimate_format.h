// Text of `zerotrain estimate`: zerotrain's model-state accounting and
// DeepSpeed's estimator, as DeepSpeed prints its tables ("per CPU | per GPU
// | Options", GB = 2^30 bytes with 2 decimals). Formulas are in estimate.h.
//
//   EstimateRequest r{.params = 124'475'904, .ds_params = 124'439'808};
//   StatusOr<std::string> text = format_estimate(r);
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "tools/estimate.h"

namespace zerotrain::tools {

// Which rows to print: --offload none (no offload), cpu (offload), all (both).
enum class OffloadFilter { kAll, kNone, kCpu };
StatusOr<OffloadFilter> parse_offload_filter(std::string_view name);

struct EstimateRequest {
  std::string model_name;             // preset name, empty for --params
  int64_t params = 0;                 // zerotrain's Ψ (flat buffer elements)
  int64_t ds_params = 0;              // DeepSpeed's P (HF unique count)
  int64_t ds_largest_layer = 0;       // DeepSpeed's L (0 = unknown)
  std::string ds_largest_layer_name;  // e.g. "wte"; empty if unknown
  int64_t largest_group = 0;          // our stage-3 gather unit (0 = unknown)
  std::string largest_group_name;
  int64_t ranks_per_node = 1;
  int64_t nodes = 1;
  DType dtype = DType::kBFloat16;
  StorageLayout layout = StorageLayout::kDesign;  // which storage zerotrain's table counts
  int64_t stage3_persistent_numel = 0;  // layout engine, stage 3 (ModelCounts; 0 = unknown)
  double additional_buffer_factor = 1.5;
  OffloadFilter offload = OffloadFilter::kAll;
  // LoRA: params is the trainable layout's Ψ; the frozen base is whole on
  // the device of every rank at stages 0-2 (frozen_bytes), and partitioned
  // at stage 3: frozen_stage3_bytes per rank, of which frozen_fixed_bytes
  // (the 4-bit code tables) stay on the device with offload_param
  // (model/adapters.h frozen_partition_bytes); gathering the largest group
  // adds frozen_largest_block.
  int64_t frozen_bytes = 0;
  int64_t frozen_stage3_bytes = 0;
  int64_t frozen_fixed_bytes = 0;
  int64_t frozen_largest_block = 0;
  std::string adapter_note;  // what the adapters are; empty without
};

// The request for a preset (counts from model_counts) or for a bare count.
EstimateRequest request_for_model(const std::string& name, const ModelCounts& counts);
EstimateRequest request_for_params(int64_t params, int64_t largest_layer);

// Bytes as DeepSpeed prints them: bytes / 2^30 with 2 decimals, "GB" suffix.
std::string format_gb(int64_t bytes);
// 124439808 -> "124,439,808".
std::string format_count(int64_t n);

// All tables; InvalidArgument for bad sizes (params, ranks, nodes < 1,
// additional_buffer_factor <= 0).
StatusOr<std::string> format_estimate(const EstimateRequest& request);

}  // namespace zerotrain::tools
