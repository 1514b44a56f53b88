// pass_trace: one micro-step of a model::Module as the ParamCoordinator's trace
// — forward stages 0..G-1 (step s), then backward stages G-1..0 (step
// 2G-1-s) — each step naming the groups it reads
// (Module::param_groups_read). Stage 3 gathers by it; stages 1-2 with a
// 16-bit compute copy expand by it (half_compute.h).
//
//   ZT_ASSIGN_OR_RETURN(auto c, ParamCoordinator::create(pass_trace(m), numel, o, backend));
//   c.before_step(backward_step(m, s));
#pragma once

#include <vector>

#include "model/module.h"
#include "zero/param_coordinator.h"

namespace zerotrain::zero {

std::vector<TraceStep> pass_trace(const model::Module& m);
// The trace step of backward stage s.
inline int backward_step(const model::Module& m, int s) { return 2 * m.num_groups() - 1 - s; }

}  // namespace zerotrain::zero
