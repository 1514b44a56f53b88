// What the trainer prints: the per-step line (DeepSpeed-style fields), the
// progress bar for a TTY, process RSS, byte formatting.
//
//   StepLine l{.step = 10, .total_steps = 200, .loss = 2.31, ...};
//   out << format_step_line(l) << "\n";
//   // [zerotrain] step 10/200 | loss 2.3100 | lr 1.000e-03 | loss_scale 1 | ...
//
// Thread-safety: pure functions (rss_bytes reads /proc).
#pragma once

#include <cstdint>
#include <string>

namespace zerotrain::train {

struct StepLine {
  int64_t step = 0, total_steps = 0;
  double loss = 0;
  double lr = 0;
  double loss_scale = 1;
  double grad_norm = 0;
  int64_t skipped_steps = 0;
  double tokens_per_s = 0;
  double step_ms = 0;
  int64_t rss_bytes = 0;
  std::string memory;  // format_memory_compact (memory_log.h)
};

std::string format_step_line(const StepLine& l);
// One --metrics JSON line (with its newline): the loss to a float's 9
// digits, lr and loss scale exact, grad_norm -1 when not finite.
//   {"step": 3, "loss": 5.53759575, "lr": 0.002, "loss_scale": 1, "grad_norm": 3.1, "skipped":
//   false}
std::string format_metrics_line(int64_t step, double loss, double lr, double loss_scale,
                                double grad_norm, bool skipped);
// "\r[=======>        ]  42/200  loss 2.3100" (no newline), width 30.
std::string format_progress(int64_t step, int64_t total, double loss);
// "95.3 MiB", "1.20 GiB", "512 B".
std::string format_bytes(int64_t bytes);
// Resident set size of this process (0 when /proc is unavailable).
int64_t rss_bytes();
// The process's peak resident set (VmHWM), 0 if unreadable.
int64_t peak_rss_bytes();

}  // namespace zerotrain::train
