// Trainer log formatting and RSS.
#include "train/train_log.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>

namespace zerotrain::train {

std::string format_bytes(int64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (bytes < 1024) {
    std::snprintf(buf, sizeof(buf), "%lld B", static_cast<long long>(bytes));
  } else if (b < 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", b / (1024.0 * 1024));
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", b / (1024.0 * 1024 * 1024));
  }
  return buf;
}

std::string format_metrics_line(int64_t step, double loss, double lr, double loss_scale,
                                double grad_norm, bool skipped) {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "{\"step\": %lld, \"loss\": %.9g, \"lr\": %.17g, \"loss_scale\": %.17g, "
                "\"grad_norm\": %.9g, \"skipped\": %s}\n",
                static_cast<long long>(step), loss, lr, loss_scale,
                std::isfinite(grad_norm) ? grad_norm : -1.0, skipped ? "true" : "false");
  return buf;
}

std::string format_step_line(const StepLine& l) {
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "[zerotrain] step %lld/%lld | loss %.4f | lr %.3e | loss_scale %g | grad_norm "
                "%.3f | skipped %lld | %.0f tokens/s | %.1f ms/step | rss %s | mem %s",
                static_cast<long long>(l.step), static_cast<long long>(l.total_steps), l.loss, l.lr,
                l.loss_scale, l.grad_norm, static_cast<long long>(l.skipped_steps), l.tokens_per_s,
                l.step_ms, format_bytes(l.rss_bytes).c_str(),
                l.memory.c_str());
  return buf;
}

std::string format_progress(int64_t step, int64_t total, double loss) {
  constexpr int kWidth = 30;
  const int filled = total > 0 ? static_cast<int>(kWidth * step / total) : kWidth;
  std::string bar(kWidth, ' ');
  for (int i = 0; i < filled && i < kWidth; ++i) bar[i] = '=';
  if (filled < kWidth) bar[filled] = '>';
  char buf[128];
  std::snprintf(buf, sizeof(buf), "\r[%s] %lld/%lld  loss %.4f", bar.c_str(),
                static_cast<long long>(step), static_cast<long long>(total), loss);
  return buf;
}

int64_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

int64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // kB
  }
  return 0;
}

}  // namespace zerotrain::train
