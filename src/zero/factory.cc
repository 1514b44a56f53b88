// Stage dispatch: config.zero.stage -> its ZeroStrategy.
#include "zero/factory.h"

#include <algorithm>
#include <string>
#include <utility>

#include "zero/options.h"
#include "zero/stage0_strategy.h"
#include "zero/stage1_strategy.h"
#include "zero/stage2_strategy.h"
#include "zero/stage3_strategy.h"

namespace zerotrain::zero {
namespace {

// DeepSpeed closes a bucket (or a stage-3 optimizer sub-group) when the next
// tensor would not fit, so a size of 0 means one tensor each. zerotrain's
// buckets are flat element ranges: 0 becomes the largest tensor's element
// count (per rank for sub-groups, which cover a rank's partition).
StrategyOptions with_tensor_sized_zeros(StrategyOptions o, const model::Module& model, int world) {
  int64_t largest = 1;
  for (const model::TensorInfo& t : model.layout().tensors()) largest = std::max(largest, t.numel);
  if (o.reduce_bucket_size == 0) o.reduce_bucket_size = largest;
  if (o.sub_group_size == 0) o.sub_group_size = (largest + world - 1) / world;
  return o;
}

template <typename S>
StatusOr<std::unique_ptr<ZeroStrategy>> as_strategy(StatusOr<std::unique_ptr<S>> s) {
  if (!s.ok()) return s.status();
  return std::unique_ptr<ZeroStrategy>(std::move(s).value());
}

}  // namespace

StatusOr<std::unique_ptr<ZeroStrategy>> make_strategy(const config::Config& config,
                                                      model::Module* model,
                                                      comm::Communicator* comm,
                                                      const OptimizerNeeds& optimizer,
                                                      const InitialWeights& initial_weights) {
  const int stage = config.zero.stage;
  // Offload changes where states live; running without it while the config
  // asks for it would be a silently ignored key.
  if (config.zero.offload_param.enabled() && stage < 3)
    return invalid_argument(
        "zero_optimization.offload_param: parameter offload needs stage 3 (parameters are "
        "partitioned only there), got stage " +
        std::to_string(stage) + "; use offload_optimizer for stages 1 and 2");
  if (config.zero.offload_optimizer.enabled() && stage == 0)
    return invalid_argument(
        "zero_optimization.offload_optimizer: stage 0 keeps no partitioned optimizer states to "
        "offload; use stage 1, 2 or 3 (or set device to \"none\")");
  StrategyOptions o =
      with_tensor_sized_zeros(strategy_options(config, optimizer), *model, comm->world_size());
  if (initial_weights && stage < 3) {
    // Every rank holds the whole model below stage 3: fill it here.
    if (model->parameters() == nullptr)
      return invalid_argument("initial weights: stages 0-2 need the model's flat parameter buffer");
    ZT_RETURN_IF_ERROR(model->load_parameters(initial_weights));
  }
  o.initial_weights = initial_weights;
  switch (stage) {
    case 0:
      return as_strategy(DataParallelStrategy::create(model, comm, o));
    case 1:
      return as_strategy(Stage1Strategy::create(model, comm, o));
    case 2:
      return as_strategy(Stage2Strategy::create(model, comm, o));
    case 3:
      return as_strategy(Stage3Strategy::create(model, comm, o));
    default:
      break;
  }
  return invalid_argument("zero_optimization.stage: stage " + std::to_string(stage) +
                          " does not exist (ZeRO stages are 0, 1, 2 and 3)");
}

}  // namespace zerotrain::zero
