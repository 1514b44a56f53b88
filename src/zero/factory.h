// The one place the ZeRO stage is chosen: config.zero.stage -> its
// strategy, over any Module on any device.
//
//   ZT_ASSIGN_OR_RETURN(auto s, make_strategy(config, &model, comm,
//       {.state_count = opt->state_count(), .reads_16bit_gradients = opt->reads_16bit_gradients()}));
//
// Thread-safety: a pure factory.
#pragma once

#include <memory>

#include "comm/communicator.h"
#include "config/config.h"
#include "model/module.h"
#include "zero/options.h"
#include "zero/zero_strategy.h"

namespace zerotrain::zero {

// stage 0 -> DataParallelStrategy; 1 -> Stage1Strategy; 2 ->
// Stage2Strategy; 3 -> Stage3Strategy (with the stage3_* keys,
// sub_group_size, overlap_comm, offload_param and offload_optimizer).
// offload_optimizer at stage 0 and offload_param below stage 3 are
// InvalidArgument naming the key (never ignored). optimizer: what the
// optimizer needs of the strategy (OptimizerNeeds). initial_weights (optional): the
// initial parameters by flat range — stage 3 reads each rank's partition
// through it; stages 0-2 fill the model's flat buffer from it.
StatusOr<std::unique_ptr<ZeroStrategy>> make_strategy(const config::Config& config,
                                                      model::Module* model,
                                                      comm::Communicator* comm,
                                                      const OptimizerNeeds& optimizer,
                                                      const InitialWeights& initial_weights = {});

}  // namespace zerotrain::zero
