// DeepSpeed's flops profiler report, from zerotrain's own numbers: the
// model family's per-stage parameters and MACs (Module::cost), the stage
// times of the profiled forward (Module::set_stage_timing) and the engine's
// phase times. Printed by rank 0 at one optimizer step, in DeepSpeed's
// layout: the summary, the top modules per depth, the per-module tree.
// zerotrain's modules are its stages (embeddings, each block, the head) at
// depth 1 under the model at depth 0; DeepSpeed would descend further.
//
//   FlopsProfile p{.step = 1, .world_size = 2, .micro_batch = 4, .cost = m.cost(4, 1024), ...};
//   out << format_flops_profile(p, cfg.flops_profiler);
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "config/config.h"
#include "model/module.h"

namespace zerotrain::train {

struct FlopsProfile {
  int64_t step = 0;  // DeepSpeed's global_steps (0-based) of the profiled step
  int world_size = 1;
  int64_t micro_batch = 1;
  model::ModelCost cost;            // for the profiled (B, T)
  std::vector<double> stage_fwd_s;  // each stage's forward compute, seconds
  double fwd_s = 0;                 // the profiled micro-step's forward (hooks included)
  double bwd_s = 0;                 // its backward with the reduction
  double step_s = 0;                // the optimizer step
  // The model's training FLOPs for the micro-batch by the formula MFU uses
  // everywhere in zerotrain (ModelInfo::flops_per_token(T) · B·T), and the
  // peak it is measured against (FLOP/s; 0: unknown).
  int64_t train_flops = 0;
  double peak_flops = 0;
};

std::string format_flops_profile(const FlopsProfile& p, const config::FlopsProfilerConfig& cfg);

// The report to `log`, or (output_file) atomically to that file with a line
// in `log` saying where; `step` is the 1-based optimizer step.
Status emit_flops_profile(const FlopsProfile& p, const config::FlopsProfilerConfig& cfg,
                          int64_t step, std::ostream& log);

// DeepSpeed's number formats (Python's round(x, 2) printed by str()):
// "124.44 M" / "38.6 K" / "512"; "43.5 GMACs"; "7.1 TFLOPS"; "12.3 ms" / "4.0 us" / "1.2 s".
std::string params_to_string(double n);
std::string macs_to_string(double n);
std::string flops_to_string(double flops_per_s);
std::string duration_to_string(double seconds);

}  // namespace zerotrain::train
