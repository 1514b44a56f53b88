// DeepSpeed's estimator and model counts (see estimate.h).
#include "tools/estimate.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

#include "model/param_layout.h"
#include "zero/stage3_layout.h"

namespace zerotrain::tools {

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

namespace {

// "h.12.mlp.c_fc" -> "mlp.c_fc": a module's name without its layer prefix.
std::string without_layer_prefix(const std::string& module) {
  const size_t dot = module.find('.');
  if (dot == std::string::npos || dot + 1 >= module.size()) return module;
  size_t end = dot + 1;
  while (end < module.size() && std::isdigit(static_cast<unsigned char>(module[end]))) ++end;
  if (end == dot + 1 || end >= module.size() || module[end] != '.') return module;
  return module.substr(end + 1);
}

}  // namespace

ModelCounts model_counts(const model::ParamLayout& layout, int64_t stage3_persistence_threshold) {
  ModelCounts c;
  c.stage3_persistent_numel =
      zero::Stage3Layout(layout, 1, 0, stage3_persistence_threshold).persistent_numel();
  c.buffer_numel = layout.total_numel();
  for (const model::GroupInfo& g : layout.groups()) {
    if (g.numel > c.largest_group) {
      c.largest_group = g.numel;
      c.largest_group_name = g.name;
    }
  }
  // HF modules' parameters(recurse=False): the tensors of one module share
  // their name up to the last dot; they are adjacent in the layout.
  std::string module;
  int64_t module_params = 0;
  auto close_module = [&] {
    if (module_params > c.ds_largest_layer) {
      c.ds_largest_layer = module_params;
      c.ds_largest_layer_name = without_layer_prefix(module);
    }
  };
  for (const model::TensorInfo& t : layout.tensors()) {
    c.hf_params += model::hf_numel(t);
    c.stored_params += t.numel;
    const size_t dot = t.name.rfind('.');
    const std::string m = dot == std::string::npos ? t.name : t.name.substr(0, dot);
    if (m != module) {
      close_module();
      module = m;
      module_params = 0;
    }
    module_params += model::hf_numel(t);
  }
  close_module();
  return c;
}

}  // namespace zerotrain::tools
