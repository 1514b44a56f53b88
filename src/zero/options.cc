// StrategyOptions from the config, and the reduction policy.
#include "zero/options.h"

#include <cmath>
#include <string>

namespace zerotrain::zero {

DType gradient_wire_dtype(const config::Config& config) {
  return config.communication_data_type.value_or(config.model_dtype());
}

StrategyOptions strategy_options(const config::Config& config, const OptimizerNeeds& optimizer) {
  const config::ZeroConfig& z = config.zero;
  StrategyOptions o;
  o.dtype = config.model_dtype();
  o.state_count = optimizer.state_count;
  o.optimizer_reads_16bit_gradients = optimizer.reads_16bit_gradients;
  o.allreduce_op = config.gradient_allreduce_op;
  o.prescale = config.prescale_gradients;
  o.predivide_factor = config.gradient_predivide_factor;
  o.grad_wire = gradient_wire_dtype(config);
  o.reduce_bucket_size = z.reduce_bucket_size;
  o.allgather_bucket_size = z.allgather_bucket_size;
  o.reduce_scatter = z.reduce_scatter;
  o.allgather_partitions = z.allgather_partitions;
  o.overlap_comm = z.overlap_comm;
  o.offload_optimizer = z.offload_optimizer.enabled();
  o.pin_memory = z.offload_optimizer.pin_memory;
  o.offload_param = z.offload_param.enabled();
  o.pin_param_memory = z.offload_param.pin_memory;
  o.prefetch_bucket_size = z.stage3_prefetch_bucket_size;
  o.param_persistence_threshold = z.stage3_param_persistence_threshold;
  o.model_persistence_threshold = z.stage3_model_persistence_threshold;
  o.max_live_parameters = z.stage3_max_live_parameters;
  o.max_reuse_distance = z.stage3_max_reuse_distance;
  o.sub_group_size = z.sub_group_size;
  return o;
}

ModelStateSetup model_state_setup(const config::Config& config, int64_t numel, int world) {
  return {.params = numel,
          .world_size = world,
          .ranks_per_node = world,
          .dtype = config.model_dtype(),
          .reduce_bucket_size = config.zero.reduce_bucket_size};
}

ReductionPolicy reduction_policy(const StrategyOptions& o, int world) {
  if (world == 1 || o.allreduce_op == config::AllreduceOp::kSum) return {};
  if (o.prescale) return {1.0f / static_cast<float>(world), 1.0f, comm::ReduceOp::kSum};
  if (o.predivide_factor == 1.0) return {1.0f, 1.0f, comm::ReduceOp::kAvg};
  return {static_cast<float>(1.0 / o.predivide_factor),
          static_cast<float>(o.predivide_factor / world), comm::ReduceOp::kSum};
}

Status validate_common(const StrategyOptions& o) {
  if (o.state_count < 0) return invalid_argument("ZeRO strategy: state_count < 0");
  if (!(o.predivide_factor > 0) || !std::isfinite(o.predivide_factor))
    return invalid_argument("gradient_predivide_factor: must be a positive number, got " +
                            std::to_string(o.predivide_factor));
  return ok_status();
}

}  // namespace zerotrain::zero
