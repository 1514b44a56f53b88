// Stage dispatch: config.zero.stage -> its ZeroStrategy.
#include "engine/zero_strategy.h"

#include <string>
#include <utility>

#include "engine/data_parallel.h"
#include "zero/grad_wire.h"
#include "zero/sharded_strategy.h"
#include "zero/stage3_strategy.h"

namespace zerotrain::engine {
namespace {

StatusOr<std::unique_ptr<ZeroStrategy>> make_stage3(const config::Config& config,
                                                    model::GptModel* model,
                                                    comm::Communicator* comm, int state_count) {
  const config::ZeroConfig& z = config.zero;
  zero::Stage3Options o;
  o.model = model;
  o.comm = comm;
  o.dtype = config.model_dtype();
  o.state_count = state_count;
  o.allreduce_op = config.gradient_allreduce_op;
  o.prescale = config.prescale_gradients;
  o.predivide_factor = config.gradient_predivide_factor;
  o.grad_wire = zero::gradient_wire_dtype(config);
  o.reduce_bucket_size = z.reduce_bucket_size;
  o.prefetch_bucket_size = z.stage3_prefetch_bucket_size;
  o.param_persistence_threshold = z.stage3_param_persistence_threshold;
  o.model_persistence_threshold = z.stage3_model_persistence_threshold;
  o.max_live_parameters = z.stage3_max_live_parameters;
  o.max_reuse_distance = z.stage3_max_reuse_distance;
  o.sub_group_size = z.sub_group_size;
  o.overlap_comm = z.overlap_comm;
  o.offload_param = z.offload_param.enabled();
  o.pin_param_memory = z.offload_param.pin_memory;
  o.offload_optimizer = z.offload_optimizer.enabled();
  o.pin_memory = z.offload_optimizer.pin_memory;
  ZT_ASSIGN_OR_RETURN(std::unique_ptr<zero::Stage3Strategy> s, zero::Stage3Strategy::create(o));
  return std::unique_ptr<ZeroStrategy>(std::move(s));
}

}  // namespace

StatusOr<std::unique_ptr<ZeroStrategy>> make_zero_strategy(const config::Config& config,
                                                           model::GptModel* model,
                                                           comm::Communicator* comm,
                                                           int state_count) {
  const int stage = config.zero.stage;
  // Offload changes where states live; running without it while the config
  // asks for it would be a silently ignored key.
  const config::OffloadConfig& offload_opt = config.zero.offload_optimizer;
  if (config.zero.offload_param.enabled() && stage < 3)
    return invalid_argument(
        "zero_optimization.offload_param: parameter offload needs stage 3 (parameters are "
        "partitioned only there), got stage " +
        std::to_string(stage) + "; use offload_optimizer for stages 1 and 2");
  if (offload_opt.enabled() && stage == 0)
    return invalid_argument(
        "zero_optimization.offload_optimizer: stage 0 keeps no partitioned optimizer states to "
        "offload; use stage 1, 2 or 3 (or set device to \"none\")");
  if (stage == 3) return make_stage3(config, model, comm, state_count);
  if (stage == 1 || stage == 2) {
    zero::ShardedOptions o;
    o.model = model;
    o.comm = comm;
    o.stage = stage;
    o.dtype = config.model_dtype();
    o.state_count = state_count;
    o.allreduce_op = config.gradient_allreduce_op;
    o.prescale = config.prescale_gradients;
    o.predivide_factor = config.gradient_predivide_factor;
    o.grad_wire = zero::gradient_wire_dtype(config);
    o.reduce_bucket_size = config.zero.reduce_bucket_size;
    o.allgather_bucket_size = config.zero.allgather_bucket_size;
    o.reduce_scatter = config.zero.reduce_scatter;
    o.allgather_partitions = config.zero.allgather_partitions;
    o.overlap_comm = config.zero.overlap_comm;
    o.offload_optimizer = offload_opt.enabled();
    o.pin_memory = offload_opt.pin_memory;
    ZT_ASSIGN_OR_RETURN(std::unique_ptr<zero::ShardedStrategy> s, zero::ShardedStrategy::create(o));
    return std::unique_ptr<ZeroStrategy>(std::move(s));
  }
  if (stage != 0)
    return invalid_argument("zero_optimization.stage: stage " + std::to_string(stage) +
                            " does not exist (ZeRO stages are 0, 1, 2 and 3)");
  DataParallelOptions dp;
  dp.model = model;
  dp.comm = comm;
  dp.dtype = config.model_dtype();
  dp.state_count = state_count;
  dp.allreduce_op = config.gradient_allreduce_op;
  dp.prescale = config.prescale_gradients;
  dp.predivide_factor = config.gradient_predivide_factor;
  dp.grad_wire = zero::gradient_wire_dtype(config);
  ZT_ASSIGN_OR_RETURN(std::unique_ptr<DataParallelStrategy> s, DataParallelStrategy::create(dp));
  return std::unique_ptr<ZeroStrategy>(std::move(s));
}

}  // namespace zerotrain::engine
