// Stage dispatch: config.zero.stage -> its ZeroStrategy.
#include "engine/zero_strategy.h"

#include <algorithm>
#include <string>

#include "engine/data_parallel.h"

namespace zerotrain::engine {

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

StatusOr<std::unique_ptr<ZeroStrategy>> make_zero_strategy(const config::Config& config,
                                                           model::GptModel* model,
                                                           comm::Communicator* comm,
                                                           int state_count) {
  if (config.zero.stage != 0)
    return invalid_argument("zero_optimization.stage: stage " + std::to_string(config.zero.stage) +
                            " is not supported yet (this engine implements stage 0, data "
                            "parallel all-reduce)");
  DataParallelOptions dp;
  dp.model = model;
  dp.comm = comm;
  dp.dtype = config.model_dtype();
  dp.state_count = state_count;
  dp.allreduce_op = config.gradient_allreduce_op;
  dp.prescale = config.prescale_gradients;
  dp.predivide_factor = config.gradient_predivide_factor;
  ZT_ASSIGN_OR_RETURN(std::unique_ptr<DataParallelStrategy> s, DataParallelStrategy::create(dp));
  return std::unique_ptr<ZeroStrategy>(std::move(s));
}

}  // namespace zerotrain::engine
