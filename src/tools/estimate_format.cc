// Renders `zerotrain estimate` in DeepSpeed's table form.
#include "tools/estimate_format.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/range.h"

namespace zerotrain::tools {

StatusOr<OffloadFilter> parse_offload_filter(std::string_view name) {
  if (name == "all") return OffloadFilter::kAll;
  if (name == "none") return OffloadFilter::kNone;
  if (name == "cpu") return OffloadFilter::kCpu;
  return invalid_argument("offload: expected cpu, none or all, got '" + std::string(name) + "'");
}

EstimateRequest request_for_model(const std::string& name, const ModelCounts& c) {
  EstimateRequest r;
  r.model_name = name;
  r.params = c.buffer_numel;
  r.ds_params = c.hf_params;
  r.ds_largest_layer = c.ds_largest_layer;
  r.ds_largest_layer_name = c.ds_largest_layer_name;
  r.largest_group = c.largest_group;
  r.largest_group_name = c.largest_group_name;
  r.stage3_persistent_numel = c.stage3_persistent_numel;
  return r;
}

EstimateRequest request_for_params(int64_t params, int64_t largest_layer) {
  EstimateRequest r;
  r.params = params;
  r.ds_params = params;
  r.ds_largest_layer = largest_layer;
  r.largest_group = largest_layer;
  return r;
}

std::string format_gb(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fGB", static_cast<double>(bytes) / (1LL << 30));
  return buf;
}

std::string format_count(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

namespace {

constexpr const char* kHeader = "  per CPU  |  per GPU |   Options\n";

// One row exactly as DeepSpeed prints it: f" {cpu:7.2f}GB | {gpu:6.2f}GB | {options}".
std::string row(const MemoryEstimate& m, const std::string& options) {
  char buf[256];
  std::snprintf(buf, sizeof buf, " %7.2fGB | %6.2fGB | %s\n",
                static_cast<double>(m.host_bytes) / (1LL << 30),
                static_cast<double>(m.device_bytes) / (1LL << 30), options.c_str());
  return buf;
}

bool wanted(OffloadFilter f, bool offload) {
  return f == OffloadFilter::kAll || (f == OffloadFilter::kCpu) == offload;
}

std::string hw_line(const EstimateRequest& r) {
  std::ostringstream o;
  o << "HW: Setup with " << r.nodes << (r.nodes > 1 ? " nodes, " : " node, ") << r.ranks_per_node
    << (r.ranks_per_node > 1 ? " GPUs" : " GPU") << " per node.\n";
  return o.str();
}

// The formulas lines of each layout.
std::string layout_lines(const EstimateRequest& r) {
  const zero::StateBytes b = zero::state_bytes(r.dtype);
  std::ostringstream o;
  if (r.layout == StorageLayout::kEngine) {
    const bool half = r.dtype != DType::kFloat32;
    o << "== zerotrain, layout engine: what the engine allocates and reports "
         "(--layout design: the ZeRO formulas' storage) ==\n";
    if (half)
      o << dtype_name(r.dtype)
        << " training, stages 0-2: the design layout (2 params + 2 grads + 12 fp32 master, "
           "Adam m, v); offload (1, 2): host (4 master + 8 Adam)Psi/N plus the optimizer's "
           "grads (fp32 4Psi/N at stage 1, the 2Psi/N accumulator at stage 2), device 4Psi "
           "(stage 1) or 2Psi (stage 2)\n";
    else
      o << "fp32 training, stages 0-2: 4 params + 4 grads + 8 Adam m, v (the params are the "
           "master)\nstage 0: 16Psi; 1: 8Psi + 8Psi/N; 2: 4Psi + 12Psi/N (4Psi + 16Psi/N, a "
           "master copy, when reduce_bucket_size < Psi cuts it into several buckets); "
           "offload (1, 2): "
           "host 16Psi/N (master copy, Adam, fp32 grads), device 8Psi (stage 1) or 4Psi "
           "(stage 2)\n";
    o << "stage 3: " << b.total() << "Psi/N (" << b.param << " params + " << b.grad << " grads + "
      << b.optimizer << (half ? " master, Adam" : " Adam; the fp32 params are the master")
      << "); offload (param + optimizer): all 16Psi/N on the host\n";
    if (r.stage3_persistent_numel > 0)
      o << "stage 3 also keeps " << format_count(r.stage3_persistent_numel)
        << " elements whole on every rank (tensors under stage3_param_persistence_threshold "
        << kDefaultPersistenceThreshold << ", fp32): + "
        << format_count(4 * r.stage3_persistent_numel) << " bytes per GPU, counted below\n";
    return o.str();
  }
  o << "== zerotrain, layout design: the ZeRO formulas' storage (16-bit training and fp32 stage 3 "
       "store this; --layout engine: what the engine allocates) ==\n"
    << dtype_name(r.dtype) << " training: " << b.total() << " B/param = " << b.param << " params + "
    << b.grad << " grads + " << b.optimizer
    << (r.dtype == DType::kFloat32 ? " Adam m, v (fp32 params are the master; no 16-bit copy)"
                                   : " fp32 master, Adam m, v")
    << "\n"
    << "stage 0: " << b.total() << "Psi; 1: " << b.param + b.grad << "Psi + " << b.optimizer
    << "Psi/N; 2: " << b.param << "Psi + " << b.grad + b.optimizer << "Psi/N; 3: " << b.total()
    << "Psi/N; offload moves the " << b.optimizer
    << "Psi/N optimizer share (stage 3: and the params) to host\n";
  return o.str();
}

std::string zerotrain_table(const EstimateRequest& r) {
  const zero::StateBytes b = zero::state_bytes(r.dtype);
  const zero::ModelStateSetup s{.params = r.params,
                                .world_size = r.nodes * r.ranks_per_node,
                                .ranks_per_node = r.ranks_per_node,
                                .dtype = r.dtype,
                                .layout = r.layout,
                                .stage3_persistent_numel = r.stage3_persistent_numel};
  std::ostringstream o;
  o << layout_lines(r) << "Psi = " << format_count(r.params) << ", N = " << s.world_size
    << ", partitions ceil(Psi/N) = "
    << format_count(shard_size(r.params, static_cast<int>(s.world_size))) << " elements\n"
    << hw_line(r) << "  per CPU = host memory per node, per GPU = device memory per rank\n"
    << kHeader;
  for (int stage = 0; stage <= 3; ++stage) {
    for (bool offload : {true, false}) {
      if (!wanted(r.offload, offload) || (stage == 0 && offload)) continue;
      StatusOr<MemoryEstimate> m = zero::model_state_bytes(s, stage, offload);
      if (!m.ok()) continue;  // inputs were validated by format_estimate
      if (stage < 3) {
        m->device_bytes += r.frozen_bytes;
      } else if (!offload) {
        m->device_bytes += r.frozen_stage3_bytes;
      } else {  // offload_param: the partition in host memory, the code tables not
        const int64_t host = r.frozen_stage3_bytes - r.frozen_fixed_bytes;
        m->device_bytes += r.frozen_fixed_bytes;
        m->host_bytes_per_rank += host;
        m->host_bytes += host * r.ranks_per_node;
      }
      o << row(*m, "stage=" + std::to_string(stage) + ", offload=" + (offload ? "cpu " : "none"));
    }
  }
  if (r.largest_group > 0) {
    const int64_t gather = b.param * r.largest_group + r.frozen_largest_block;
    o << "stage 3 also gathers one layer group at a time: + " << format_gb(gather)
      << " per rank while it is live (" << format_count(r.largest_group) << " elements"
      << (r.largest_group_name.empty() ? "" : ", " + r.largest_group_name)
      << (r.frozen_largest_block > 0
              ? "; a group's frozen base adds at most " + format_count(r.frozen_largest_block) +
                    " bytes"
              : "")
      << "), not above\n";
  }
  return o.str();
}

std::string deepspeed_tables(const EstimateRequest& r) {
  const DeepSpeedSetup d{.total_params = r.ds_params,
                         .largest_layer_params = r.ds_largest_layer,
                         .gpus_per_node = r.ranks_per_node,
                         .nodes = r.nodes,
                         .additional_buffer_factor = r.additional_buffer_factor};
  std::ostringstream o;
  o << "== DeepSpeed's estimator (reference formulas; assumes 16-bit training, 18 B/param "
       "partitioned, additional_buffer_factor "
    << r.additional_buffer_factor << ") ==\n";
  if (r.dtype == DType::kFloat32) o << "note: DeepSpeed's estimator ignores the dtype (fp32)\n";
  const std::string intro =
      "Estimated memory needed for params, optim states and gradients for a:\n";
  o << "-- estimate_zero2_model_states_mem_needs (ZeRO-1 and ZeRO-2) --\n"
    << intro << hw_line(r) << "SW: Model with " << r.ds_params / 1000000 << "M total params.\n"
    << kHeader;
  for (bool offload : {true, false}) {
    if (!wanted(r.offload, offload)) continue;
    o << row(deepspeed_zero2_estimate(d, offload),
             std::string("offload_optimizer=") + (offload ? "cpu " : "none"));
  }
  o << "-- estimate_zero3_model_states_mem_needs (ZeRO-3) --\n"
    << intro << hw_line(r) << "SW: Model with " << r.ds_params / 1000000 << "M total params, "
    << r.ds_largest_layer / 1000000 << "M largest layer params.\n"
    << kHeader;
  for (bool opt : {true, false}) {
    for (bool param : {true, false}) {
      if ((!opt && param) || !wanted(r.offload, opt)) continue;
      for (bool zero_init : {true, false}) {
        o << row(deepspeed_zero3_estimate(d, opt, param, zero_init),
                 std::string("offload_param=") + (param ? "cpu " : "none") +
                     ", offload_optimizer=" + (opt ? "cpu " : "none") +
                     ", zero_init=" + (zero_init ? "1" : "0"));
      }
    }
  }
  if (r.ds_largest_layer == 0)
    o << "largest layer unknown (pass --largest-layer-params L); counted as 0\n";
  else if (!r.ds_largest_layer_name.empty())
    o << "largest layer: " << r.ds_largest_layer_name << ", " << format_count(r.ds_largest_layer)
      << " params (as on HF's GPT2LMHeadModel)\n";
  return o.str();
}

}  // namespace

StatusOr<std::string> format_estimate(const EstimateRequest& r) {
  if (r.params < 1 || r.ds_params < 1)
    return invalid_argument("params: must be >= 1, got " + std::to_string(r.params));
  if (r.ranks_per_node < 1) return invalid_argument("ranks: must be >= 1");
  if (r.nodes < 1) return invalid_argument("nodes: must be >= 1");
  if (!(r.additional_buffer_factor > 0))
    return invalid_argument("additional-buffer-factor: must be > 0");
  if (r.ds_largest_layer < 0) return invalid_argument("largest-layer-params: must be >= 0");
  // The largest product printed is DeepSpeed's P * max(4G, 16) * abf bytes: keep it in int64.
  const double gpus = static_cast<double>(r.nodes) * static_cast<double>(r.ranks_per_node);
  const double biggest = static_cast<double>(std::max(r.params, r.ds_params)) * 18 *
                         std::max(4 * gpus, 18.0) * std::max(r.additional_buffer_factor, 1.0);
  if (biggest > 4e18)
    return invalid_argument("params x ranks too large to count in bytes (" +
                            format_count(r.params) + " params on " +
                            format_count(static_cast<int64_t>(gpus)) + " ranks)");
  std::ostringstream o;
  o << "Model states only (params, grads, optimizer); no activations, buffers or fragmentation.\n";
  if (!r.model_name.empty())
    o << "Model " << r.model_name << ": " << format_count(r.ds_params) << " params (HF count), "
      << (r.adapter_note.empty()
              ? format_count(r.params) + " in zerotrain's flat buffer (padded vocab, 64-byte "
                                         "aligned)\n"
              : format_count(r.params) + " trainable in zerotrain's flat buffer\n");
  if (!r.adapter_note.empty())
    o << r.adapter_note << ".\nzerotrain's Psi below is the trainable state; every row's per "
      << "GPU adds the frozen base, " << format_count(r.frozen_bytes) << " bytes ("
      << format_gb(r.frozen_bytes) << "), whole on every rank at stages 0-2; stage 3 partitions "
      << "it, " << format_count(r.frozen_stage3_bytes) << " bytes per rank (in host memory "
      << "with offload but the code tables). DeepSpeed's tables count every parameter as "
      << "trainable, as its estimator does on a PEFT model.\n";
  o << "GB = 2^30 bytes, as DeepSpeed prints.\n\n"
    << zerotrain_table(r) << "\n"
    << deepspeed_tables(r);
  return o.str();
}

}  // namespace zerotrain::tools
