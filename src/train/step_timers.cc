// DeepSpeed's wall_clock_breakdown timers (see step_timers.h).
#include "train/step_timers.h"

#include <cstdio>

namespace zerotrain::train {

StepTimes StepTimes::between(const engine::PhaseTimes& before, const engine::PhaseTimes& after) {
  return {.fwd_ms = 1e3 * (after.forward - before.forward),
          .bwd_inner_ms = 1e3 * (after.backward - before.backward),
          .bwd_allreduce_ms = 1e3 * (after.reduce - before.reduce),
          .step_ms = 1e3 * (after.step - before.step)};
}

std::string format_timers(const StepTimes& t, bool micro) {
  const char* s = micro ? "_microstep" : "";
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "[Rank 0] time (ms) | fwd%s: %.2f | bwd%s: %.2f | bwd_inner%s: %.2f | "
                "bwd_allreduce%s: %.2f | step%s: %.2f",
                s, t.fwd_ms, s, t.bwd_ms(), s, t.bwd_inner_ms, s, t.bwd_allreduce_ms, s, t.step_ms);
  return buf;
}

std::vector<MonitorEvent> timer_events(const StepTimes& t, int64_t samples) {
  return {{"Train/Samples/elapsed_time_ms_forward", t.fwd_ms, samples},
          {"Train/Samples/elapsed_time_ms_backward", t.bwd_ms(), samples},
          {"Train/Samples/elapsed_time_ms_backward_inner", t.bwd_inner_ms, samples},
          {"Train/Samples/elapsed_time_ms_backward_allreduce", t.bwd_allreduce_ms, samples},
          {"Train/Samples/elapsed_time_ms_step", t.step_ms, samples}};
}

}  // namespace zerotrain::train
