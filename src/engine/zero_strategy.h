// The engine's view of ZeRO: the ZeroStrategy interface, ModelStateBytes and
// zero_formula_bytes live in zero/zero_strategy.h (below the engine in the
// layer order); this header re-exports them into zerotrain::engine and keeps
// the one place stages are dispatched.
//
//   ZT_ASSIGN_OR_RETURN(auto s, make_zero_strategy(cfg, &model, comm, opt->state_count()));
//
// Thread-safety: make_zero_strategy is a pure factory.
#pragma once

#include <memory>

#include "comm/communicator.h"
#include "core/status.h"
#include "config/config.h"
#include "model/gpt_model.h"
#include "zero/zero_strategy.h"

namespace zerotrain::engine {

using zero::ModelStateBytes;
using zero::zero_formula_bytes;
using zero::ZeroStrategy;

// The strategy for config.zero.stage: stage 0 -> DataParallelStrategy;
// stages 1 and 2 -> zero::ShardedStrategy (with overlap_comm and
// offload_optimizer); stage 3 -> zero::Stage3Strategy (with the stage3_*
// keys, sub_group_size, overlap_comm, offload_param and offload_optimizer).
// offload_optimizer at stage 0 and offload_param below stage 3 are
// InvalidArgument naming the key (never ignored). state_count: the
// optimizer's state arrays per element.
StatusOr<std::unique_ptr<ZeroStrategy>> make_zero_strategy(const config::Config& config,
                                                           model::GptModel* model,
                                                           comm::Communicator* comm,
                                                           int state_count);

}  // namespace zerotrain::engine
