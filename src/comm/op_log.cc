// The comms logger's records and DeepSpeed's summary (see op_log.h).
#include "comm/op_log.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace zerotrain::comm {

const char* deepspeed_op_name(OpType op) {
  switch (op) {
    case OpType::kAllreduce:
      return "all_reduce";
    case OpType::kReduceScatter:
      return "reduce_scatter";
    case OpType::kAllgather:
      return "all_gather";
    case OpType::kBroadcast:
      return "broadcast";
    case OpType::kBarrier:
      return "barrier";
  }
  return "?";
}

std::pair<double, double> op_bandwidth_gbps(OpType op, uint64_t bytes, double ms, int n) {
  double size = static_cast<double>(bytes), algbw = 0, busbw = 0;
  const double ranks = n;
  switch (op) {
    case OpType::kAllreduce:
      algbw = 2 * size / ms;
      busbw = size / ms * (2 * (ranks - 1) / ranks);
      break;
    case OpType::kAllgather:
    case OpType::kReduceScatter:
      size *= ranks;
      algbw = size / ms;
      busbw = size / ms * ((ranks - 1) / ranks);
      break;
    case OpType::kBroadcast:
    case OpType::kBarrier:
      algbw = busbw = size / ms;
      break;
  }
  // bytes per millisecond -> gigabits per second
  return {algbw * 8 / 1e6, busbw * 8 / 1e6};
}

double trim_mean(std::vector<double> values, double fraction) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  const auto k = static_cast<size_t>(std::lround(static_cast<double>(n) * fraction));
  if (2 * k >= n) return 0;
  return std::accumulate(values.begin() + static_cast<std::ptrdiff_t>(k),
                         values.end() - static_cast<std::ptrdiff_t>(k), 0.0) /
         static_cast<double>(n - 2 * k);
}

std::string deepspeed_size(uint64_t bytes) {
  if (bytes == 0) return "0B";
  static const char* kUnits[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
  const int i =
      static_cast<int>(std::floor(std::log(static_cast<double>(bytes)) / std::log(1024.0)));
  const double v = std::round(static_cast<double>(bytes) / std::pow(1024.0, i) * 100) / 100;
  // Python's str() of a float with at most two decimals: "4.0", "1.5", "1.25".
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  std::string s(buf);
  while (s.back() == '0' && s[s.size() - 2] != '.') s.pop_back();
  return s + " " + kUnits[i];
}

void OpLog::add(OpType op, uint64_t bytes, double ms) {
  const auto [algbw, busbw] = op_bandwidth_gbps(op, bytes, ms, world_size_);
  Record& r = records_[op][bytes];
  ++r.count;
  r.latency_ms.push_back(ms);
  r.algbw_gbps.push_back(algbw);
  r.busbw_gbps.push_back(busbw);
}

std::string OpLog::line(int rank, OpType op, uint64_t bytes, double ms) const {
  const auto [algbw, busbw] = op_bandwidth_gbps(op, bytes, ms, world_size_);
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "rank=%d | comm op: %s | time (ms): %.2f | msg size: %s | algbw (Gbps): %.2f  | "
                "busbw (Gbps): %.2f ",
                rank, deepspeed_op_name(op), ms, deepspeed_size(bytes).c_str(), algbw, busbw);
  return buf;
}

std::string OpLog::summary() const {
  auto cell = [](const std::string& s) {
    std::string c = s;
    if (c.size() < 20) c.append(20 - c.size(), ' ');
    return c;
  };
  auto num = [&](double v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.2f", v);
    return cell(buf);
  };
  std::string out = cell("Comm. Op") + cell("Message Size") + cell("Count") +
                    cell("Total Latency(ms)") + cell("Avg Latency(ms)") + cell("tput_avg (Gbps)") +
                    cell("busbw_avg (Gbps)") + "\n";
  for (const auto& [op, sizes] : records_) {
    out += std::string(deepspeed_op_name(op)) + "\n";
    for (const auto& [bytes, r] : sizes) {
      const double total = std::accumulate(r.latency_ms.begin(), r.latency_ms.end(), 0.0);
      out += cell(" ") + cell(deepspeed_size(bytes)) + cell(std::to_string(r.count)) + num(total) +
             num(trim_mean(r.latency_ms, 0.1)) + num(trim_mean(r.algbw_gbps, 0.1)) +
             num(trim_mean(r.busbw_gbps, 0.1)) + "\n";
    }
  }
  return out;
}

}  // namespace zerotrain::comm
