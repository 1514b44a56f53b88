// Maps the typed ds_config sections onto the optim layer's option structs:
// optimizer (Adam/AdamW/SGD) and LR scheduler.
//
//   ZT_ASSIGN_OR_RETURN(optim::OptimizerOptions o, optimizer_options(cfg.optimizer));
//   ZT_ASSIGN_OR_RETURN(auto sched, make_scheduler(cfg.scheduler, lr));  // null for none
//
// Thread-safety: pure functions.
#pragma once

#include <memory>

#include "config/config.h"
#include "core/status.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"

namespace zerotrain::engine {

// InvalidArgument for type kNone (the engine needs an optimizer section).
StatusOr<optim::OptimizerOptions> optimizer_options(const config::OptimizerConfig& c);

// nullptr for SchedulerType::kNone (constant lr). optimizer_lr: the lr the
// optimizer was built with (WarmupLR's default max, WarmupCosineLR's base).
StatusOr<std::unique_ptr<optim::LrScheduler>> make_scheduler(const config::SchedulerConfig& c,
                                                             double optimizer_lr);

}  // namespace zerotrain::engine
