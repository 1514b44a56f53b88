// Samples summary and the clock.
#include "probes/stats.h"

#include <algorithm>
#include <chrono>

namespace zerotrain::bench {

Samples summarize(std::vector<double> values) {
  Samples s;
  s.values = values;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  s.worst = values.front();
  s.best = values.back();
  s.median = n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  s.spread = s.median > 0 ? (s.best - s.worst) / s.median : 0;
  return s;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace zerotrain::bench
