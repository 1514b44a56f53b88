// DeepSpeed's wall_clock_breakdown timers from the engine's phase times:
// after every micro-step the "_microstep" line, after every optimizer step
// the global line summed over its micro-steps, in DeepSpeed's names and
// layout (logged by rank 0), and the monitors' elapsed_time_ms_* events.
//
//   const engine::PhaseTimes t0 = engine.timings();
//   ... forward, backward, step ...
//   StepTimes t = StepTimes::between(t0, engine.timings());
//   out << format_timers(t, /*micro=*/true) << "\n";
//   // [Rank 0] time (ms) | fwd_microstep: 4.10 | bwd_microstep: 9.02 | ...
//
// zerotrain reduces gradients in the boundary step (or, with overlap_comm,
// inside the backward's hooks), so bwd_allreduce is that reduction and bwd
// is bwd_inner + bwd_allreduce: DeepSpeed's identity.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "engine/engine.h"
#include "train/monitor.h"

namespace zerotrain::train {

struct StepTimes {
  double fwd_ms = 0;
  double bwd_inner_ms = 0;      // the backward pass
  double bwd_allreduce_ms = 0;  // the gradient reduction
  double step_ms = 0;           // the optimizer step, reduction excluded
  double bwd_ms() const { return bwd_inner_ms + bwd_allreduce_ms; }
  static StepTimes between(const engine::PhaseTimes& before, const engine::PhaseTimes& after);
};

// "[Rank 0] time (ms) | fwd: 1.00 | bwd: 2.00 | bwd_inner: 1.50 |
// bwd_allreduce: 0.50 | step: 0.25" (micro: each name + "_microstep").
std::string format_timers(const StepTimes& t, bool micro);

// Train/Samples/elapsed_time_ms_{forward,backward,backward_inner,
// backward_allreduce,step} at `samples`, as DeepSpeed writes them.
std::vector<MonitorEvent> timer_events(const StepTimes& t, int64_t samples);

}  // namespace zerotrain::train
