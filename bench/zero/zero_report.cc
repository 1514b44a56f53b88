// The ZeRO section of RESULTS.md (see zero_report.h).
#include "zero_report.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace zerotrain::bench {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

double mib(const nlohmann::json& j, const char* key) {
  return j.value(key, 0.0) / (1024.0 * 1024.0);
}

double median_ms(const nlohmann::json& j, const char* key) {
  return j.contains(key) ? 1e3 * (*j.find(key)).value("median", 0.0) : 0.0;
}

std::string offload_name(const nlohmann::json& j) {
  if (!j.value("offload", false)) return "none";
  return j.value("stage", 0) == 3 ? "param + optimizer" : "optimizer";
}

bool same_case(const nlohmann::json& a, const nlohmann::json& b) {
  return a.value("stage", -1) == b.value("stage", -2) &&
         a.value("offload", false) == b.value("offload", false);
}

std::string case_rows(const nlohmann::json& cases) {
  std::ostringstream o;
  o << "| stage | offload | overlap_comm | step ms (median) | tokens/s | VmHWM per rank MiB | "
       "device MiB | host MiB | wire MB sent/step | collectives/step |\n"
    << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const nlohmann::json& j : cases) {
    const double step = median_ms(j, "step_seconds");
    const double tokens = j.value("B", 0.0) * j.value("T", 0.0) * j.value("ranks", 1.0);
    std::string hwm;
    for (const auto& v : j.value("vm_hwm_mib", nlohmann::json::array()))
      hwm += (hwm.empty() ? "" : " / ") + fmt("%.0f", v.get<double>());
    o << "| " << j.value("stage", 0) << " | " << offload_name(j) << " | "
      << (j.value("overlap_comm", false) ? "on" : "off") << " | " << fmt("%.0f", step) << " | "
      << fmt("%.0f", step > 0 ? tokens / (step / 1e3) : 0) << " | " << hwm << " | "
      << fmt("%.1f", mib(j, "device_bytes")) << " | " << fmt("%.1f", mib(j, "host_bytes"))
      << " | " << fmt("%.1f", j.value("wire_bytes_sent", 0.0) / 1e6) << " | "
      << j.value("collectives_per_step", 0) << " |\n";
  }
  return o.str();
}

std::string overlap_rows(const nlohmann::json& cases) {
  std::ostringstream o;
  o << "| stage | offload | step ms, overlap on | step ms, inline | compute alone ms | "
       "communication alone ms | on / max(compute, comm) | on / (compute + comm) | "
       "on / inline | target | CPU floor ms | on / max(compute, comm, CPU floor) |\n"
    << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const nlohmann::json& j : cases) {
    if (!j.contains("overlap_ratio")) continue;
    const double on = median_ms(j, "step_seconds"), compute = median_ms(j, "compute_seconds"),
                 comm = median_ms(j, "comm_seconds");
    double off = 0;
    for (const nlohmann::json& k : cases)
      if (same_case(j, k) && !k.value("overlap_comm", false)) off = median_ms(k, "step_seconds");
    o << "| " << j.value("stage", 0) << " | " << offload_name(j) << " | " << fmt("%.0f", on)
      << " | " << (off > 0 ? fmt("%.0f", off) : "-") << " | " << fmt("%.0f", compute)
      << (j.value("compute_skipped", 0) > 0 ? " (steps skipped)" : "") << " | "
      << fmt("%.0f", comm) << " | " << fmt("%.2f", j.value("overlap_ratio", 0.0)) << " | "
      << fmt("%.2f", compute + comm > 0 ? on / (compute + comm) : 0) << " | "
      << (off > 0 ? fmt("%.2f", on / off) : "-") << " | <= 1.10 | "
      << (j.contains("cpu_floor_seconds")
              ? fmt("%.0f", 1e3 * j.value("cpu_floor_seconds", 0.0)) + " | " +
                    fmt("%.2f", j.value("floor_ratio", 0.0))
              : "- | -")
      << " |\n";
  }
  return o.str();
}

}  // namespace

std::string zero_section(const nlohmann::json& cases) {
  std::ostringstream o;
  o << kZeroSectionBegin << "\n\n## ZeRO stages, offload and overlap_comm (zt_zero_bench)\n\n";
  if (!cases.is_array() || cases.empty()) {
    o << "(zt_zero_bench did not run)\n\n" << kZeroSectionEnd << "\n";
    return o.str();
  }
  const nlohmann::json& first = cases.front();
  o << "Written by `scripts/bench_zero.sh` (run by `make bench`, alone by `make bench-zero`). "
    << first.value("model", std::string()) << " (" << first.value("numel", 0) << " elements), "
    << first.value("precision", std::string()) << ", " << first.value("ranks", 1) << " ranks x "
    << first.value("threads", 1) << " thread, B " << first.value("B", 0) << " x T "
    << first.value("T", 0) << " a rank, reduce/allgather buckets of " << first.value("bucket", 0)
    << " elements, median of " << first.value("steps", 0)
    << " timed steps after warm-up, one process per case. VmHWM: each rank process's peak "
       "RSS. device / host: the engine's accounting (model states, buffers, activations / "
       "offloaded states); on this CPU build both are the same RAM. Compute alone: the same "
       "steps on an engine whose collectives are no-ops (same per-rank work); communication "
       "alone: the step's recorded collectives replayed with no compute; both in the same "
       "process right after the timed steps. CPU floor: (compute + communication CPU "
       "seconds of a rank, user + system, all threads) / (cores per rank): with compute "
       "and communication overlapped, the ranks' CPU work still shares the machine's "
       "cores, so no step can be shorter.\n\n"
    << case_rows(cases) << "\n### overlap_comm against compute alone and communication alone\n\n"
    << overlap_rows(cases) << "\n"
    << kZeroSectionEnd << "\n";
  return o.str();
}

StatusOr<std::string> zero_section_from_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return io_error("cannot read " + path);
  nlohmann::json cases = nlohmann::json::array();
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return corruption(path + ":" + std::to_string(n) + ": not JSON");
    cases.push_back(std::move(j));
  }
  return zero_section(cases);
}

}  // namespace zerotrain::bench
