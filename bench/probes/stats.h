// Summary of repeated timings: best, median, worst, and the relative spread,
// because this machine is shared and one number hides the noise.
//
//   Samples s = summarize({9.1, 9.4, 8.7});  // rates: higher is better
//   // s.best == 9.4, s.median == 9.1, s.worst == 8.7, s.spread == (9.4-8.7)/9.1
//
// Thread-safety: pure functions and a monotonic clock read.
#pragma once

#include <vector>

namespace zerotrain::bench {

struct Samples {
  double best = 0, median = 0, worst = 0;
  double spread = 0;  // (best - worst) / median, 0 when median is 0
  std::vector<double> values;
};

// Values are rates (GFLOP/s, GB/s): best is the maximum. Empty input gives
// all zeros.
Samples summarize(std::vector<double> values);

// Seconds on a monotonic clock.
double now_seconds();

}  // namespace zerotrain::bench
