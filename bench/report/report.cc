// RESULTS.md sections: machine, peaks, STREAM, GEMM and ops, AdamW, comm;
// the training-step section is in train_report.cc.
#include "report/report.h"

#include <cstdio>
#include <map>
#include <sstream>

#include "report/format.h"
#include "report/train_report.h"

namespace zerotrain::bench {
namespace {

using nlohmann::json;

using report_format::fmt;
using report_format::num;
using report_format::pct;
using report_format::str;

std::string spread(const Samples& s) { return fmt("±%.0f%%", 50 * s.spread); }

double seconds_per_unit(const std::string& unit) {
  return unit == "ns" ? 1e-9 : unit == "us" ? 1e-6 : unit == "ms" ? 1e-3 : 1.0;
}

// Rates from times: best rate = fastest repetition.
Samples rates(const std::vector<double>& seconds, double work) {
  std::vector<double> r;
  for (double s : seconds) r.push_back(s > 0 ? work / s : 0);
  return summarize(r);
}

// "4 KiB", "16 MiB".
std::string size_text(double bytes) {
  return bytes >= (1 << 20) ? fmt("%.0f MiB", bytes / (1 << 20)) : fmt("%.0f KiB", bytes / 1024);
}

// A Samples object from its JSON form (best, median, spread).
Samples summary_of(const json& j) {
  Samples s;
  s.best = num(j, "best"), s.median = num(j, "median"), s.spread = num(j, "spread");
  return s;
}

std::string machine_section(const ReportInputs& in) {
  const json& m = in.probe.is_object() ? in.probe["machine"] : json();
  std::ostringstream o;
  o << "## Machine\n\n| | |\n|---|---|\n";
  o << "| date (UTC) | " << str(in.meta, "date") << " |\n";
  o << "| commit | " << str(in.meta, "commit") << " |\n";
  o << "| CPU | " << str(m, "model") << " |\n";
  o << "| logical CPUs | " << num(m, "logical_cpus") << " |\n";
  o << fmt("| memory | %.1f GiB total, %.1f GiB available at probe start |\n",
           num(m, "mem_total_bytes") / (1 << 30), num(m, "mem_available_bytes") / (1 << 30));
  o << fmt("| caches (as reported) | L2 %.0f MiB a core, LLC %.0f MiB |\n",
           num(m, "l2_bytes") / (1 << 20), num(m, "llc_bytes") / (1 << 20));
  if (m.is_object() && m.contains("features")) o << "| ISA | " << m["features"].dump() << " |\n";
  o << "| load average at start | " << str(in.meta, "load_start") << " |\n";
  o << "| load average after each step | " << str(in.meta, "load_steps") << " |\n";
  o << "| load average at end | " << str(in.meta, "load_end") << " |\n";
  o << "| threads | " << str(in.meta, "threads") << " |\n\n";
  return o.str();
}

std::string peaks_section(const json& probe) {
  std::ostringstream o;
  o << "## Peaks (zt_probe)\n\nRegister-blocked loops of independent accumulators, checksum-"
       "verified; best of the repeats, spread = ± half the best-to-worst range over the median. "
       "`cpu` divides each thread's FLOPs by its own CPU time (the core's rate while it runs: "
       "the reference below), `wall` by the team's wall time (lower when other processes took "
       "the core).\n\n";
  o << "| probe | 1 core cpu | spread | 1 core wall | all cores cpu | all cores wall | threads |\n"
       "|---|---|---|---|---|---|---|\n";
  if (!probe.is_object()) return o.str() + "\n(zt_probe did not run)\n\n";
  for (const auto& [isa, c] : probe["compute"].items()) {
    if (!c.value("available", false)) {
      o << "| " << isa << " | not available: " << str(c, "reason") << " | | | | | |\n";
      continue;
    }
    const Samples s = summary_of(c["one_core_gflops"]);
    const json& all = c["all_cores_gflops"];
    o << fmt("| %s | %.1f | %s | %.1f | %.1f | %.1f | %.0f |\n", isa.c_str(), s.best,
             spread(s).c_str(), num(c["one_core_gflops_wall"], "best"), num(all, "best"),
             num(c["all_cores_gflops_wall"], "best"), num(all, "threads"));
  }
  return o.str() + "\n";
}

std::string stream_section(const json& probe) {
  std::ostringstream o;
  o << "## Memory bandwidth (zt_probe, STREAM)\n\n";
  const json& s = probe.is_object() && probe.contains("stream") ? probe["stream"] : json();
  if (!s.is_object() || s.contains("error")) return o.str() + "(STREAM did not run)\n\n";
  o << fmt(
      "Arrays of %.0f MiB each, %.0f threads. GB/s = 1e9 B/s; STREAM counts 8 B per word "
      "read or written, write-allocate adds the line read of each store.\n\n",
      num(s, "array_bytes") / (1 << 20), num(s, "threads"));
  o << "| kernel | GB/s best | median | spread | GB/s with write-allocate "
       "|\n|---|---|---|---|---|\n";
  for (const char* k : {"copy", "scale", "add", "triad"}) {
    const json& g = s[k]["gbps"];
    const Samples x = summary_of(g);
    o << fmt("| %s | %.2f | %.2f | %s | %.2f |\n", k, x.best, x.median, spread(x).c_str(),
             num(s[k]["gbps_write_allocate"], "best"));
  }
  o << "\nTriad by array size (where the caches end): ";
  for (const json& p : s["triad_sweep"]) {
    o << fmt("%.0f MiB %.1f GB/s; ", num(p, "array_bytes") / (1 << 20), num(p, "triad_gbps"));
  }
  return o.str() + "\n\n";
}

}  // namespace

std::vector<BenchmarkRuns> group_benchmark_runs(const json& doc) {
  std::vector<BenchmarkRuns> out;
  std::map<std::string, size_t> index;
  if (!doc.is_object() || !doc.contains("benchmarks")) return out;
  for (const json& run : doc["benchmarks"]) {
    if (str(run, "run_type", "iteration") != "iteration") continue;
    std::string name = str(run, "run_name", str(run, "name"));
    if (const size_t rt = name.rfind("/real_time"); rt != std::string::npos) name.erase(rt);
    auto [it, fresh] = index.emplace(name, out.size());
    if (fresh) {
      out.emplace_back();
      out.back().name = name;
    }
    BenchmarkRuns& b = out[it->second];
    if (run.value("error_occurred", false)) b.error = str(run, "error_message", "error");
    b.label = str(run, "label", b.label);
    if (b.error.empty()) {
      b.seconds.push_back(num(run, "real_time") * seconds_per_unit(str(run, "time_unit", "ns")));
      b.counters.push_back(run);
    }
  }
  return out;
}

std::optional<GemmShape> parse_gemm_name(const std::string& name) {
  GemmShape g;
  long long m, n, k;
  int ta, tb;
  if (name.rfind("BM_Matmul", 0) != 0) return std::nullopt;
  const size_t slash = name.find('/');
  if (slash == std::string::npos ||
      std::sscanf(name.c_str() + slash, "/%lld/%lld/%lld/%d/%d", &m, &n, &k, &ta, &tb) != 5) {
    return std::nullopt;
  }
  g.m = m, g.n = n, g.k = k, g.trans_a = ta != 0, g.trans_b = tb != 0;
  return g;
}

namespace {

// The bf16 GEMM reference: AMX when the probe measured it, else AVX512_BF16.
std::pair<std::string, double> bf16_peak(const json& probe) {
  for (const char* key : {"bf16_amx_peak", "bf16_dot_peak"}) {
    const json& p = probe.is_object() && probe.contains(key) ? probe[key] : json();
    if (p.is_object() && p["isa"].is_string()) return {p["isa"], num(p, "all_cores_gflops")};
  }
  return {"none", 0};
}

std::string gemm_section(const ReportInputs& in) {
  std::ostringstream o;
  o << "## GEMM and ops (zt_kernels_bench, GPT-2 small shapes)\n\n";
  const auto runs = group_benchmark_runs(in.kernels);
  if (runs.empty()) return o.str() + "(zt_kernels_bench did not run)\n\n";
  const json& fp32 = in.probe.is_object() ? in.probe["fp32_fma_peak"] : json();
  const double fp32_peak = num(fp32, "all_cores_gflops");
  const auto [bf16_isa, bf16_gflops] = bf16_peak(in.probe);
  o << fmt(
      "GFLOP/s = 2·M·N·K / wall time; ratio to the all-cores CPU-time peak of the same "
      "run (fp32 %s %.0f GFLOP/s, bf16 %s %.0f GFLOP/s), so a loaded machine lowers the "
      "ratio rather than inflating it.\n\n",
      str(fp32, "isa", "none").c_str(), fp32_peak, bf16_isa.c_str(), bf16_gflops);
  o << "| case | impl | ms (median) | GFLOP/s best | spread | of peak "
       "|\n|---|---|---|---|---|---|\n";
  for (const BenchmarkRuns& r : runs) {
    if (!r.error.empty()) {
      o << "| " << r.name << " | error: " << r.error << " | | | | |\n";
      continue;
    }
    const Samples t = summarize(r.seconds);
    const auto shape = parse_gemm_name(r.name);
    if (!shape) {
      o << fmt("| %s | | %.2f | | %s | |\n", r.name.c_str(), 1e3 * t.median,
               spread(rates(r.seconds, 1)).c_str());
      continue;
    }
    const bool bf16 = r.name.find("Bf16") != std::string::npos;
    const Samples g = rates(r.seconds, 2e-9 * shape->m * shape->n * shape->k);
    const double peak = bf16 ? bf16_gflops : fp32_peak;
    o << fmt("| %s | %s | %.2f | %.1f | %s | %s |\n", r.name.c_str(), r.label.c_str(),
             1e3 * t.median, g.best, spread(g).c_str(), pct(peak > 0 ? g.best / peak : 0).c_str());
  }
  return o.str() + "\n";
}

std::string adamw_section(const ReportInputs& in) {
  std::ostringstream o;
  o << "## AdamW step (zt_adamw_bench, 64 M parameters)\n\n";
  const auto runs = group_benchmark_runs(in.adamw);
  if (runs.empty()) return o.str() + "(zt_adamw_bench did not run)\n\n";
  const json& s = in.probe.is_object() && in.probe.contains("stream") ? in.probe["stream"] : json();
  const double triad = s.is_object() ? num(s["triad"]["gbps"], "best") : 0;
  const double triad_wa = s.is_object() ? num(s["triad"]["gbps_write_allocate"], "best") : 0;
  o << fmt(
      "Bytes: 28 an element (read p, g, m, v; write p, m, v), +2 with the bf16 copy. `of triad "
      "(bench)` is the bench's own triad over 256 MiB float arrays; the STREAM columns divide by "
      "zt_probe's triad (%.2f GB/s STREAM count, %.2f GB/s with write-allocate: AdamW rewrites "
      "lines it read, so it pays no write-allocate). Ratios above 100%% have been seen on this VM; "
      "likely causes: a 3-stream triad on two cores does not saturate the memory system while "
      "AdamW keeps 7 streams in flight, and the shared host's bandwidth varies within a run.\n\n",
      triad, triad_wa);
  o << "| case | label | GB/s best | spread | of triad (bench) | of STREAM triad | of triad + WA "
       "|\n"
       "|---|---|---|---|---|---|---|\n";
  for (const BenchmarkRuns& r : runs) {
    if (!r.error.empty()) {
      o << "| " << r.name << " | error: " << r.error << " | | | | | |\n";
      continue;
    }
    std::vector<double> bw, of;
    for (const json& c : r.counters) bw.push_back(num(c, "bytes_per_second") / 1e9);
    for (const json& c : r.counters) of.push_back(num(c, "of_triad"));
    const Samples b = summarize(bw), f = summarize(of);
    o << fmt("| %s | %s | %.2f | %s | %s | %s | %s |\n", r.name.c_str(), r.label.c_str(), b.best,
             spread(b).c_str(), pct(f.best).c_str(), pct(triad > 0 ? b.best / triad : 0).c_str(),
             pct(triad_wa > 0 ? b.best / triad_wa : 0).c_str());
  }
  return o.str() + "\n";
}

std::string comm_section(const json& comm) {
  std::ostringstream o;
  o << "## Collectives (zt_comm_bench, Gloo over loopback TCP)\n\n";
  if (!comm.is_object() || !comm.contains("results"))
    return o.str() + "(zt_comm_bench did not run)\n\n";
  o << fmt(
      "%.0f ranks, fp32 sum; every iteration's output checked element by element and the "
      "byte counters equal to the ring formulas. busbw = algbw × 2(N−1)/N (allreduce) or "
      "(N−1)/N; time = slowest rank; mean (nccl-tests) and median over iterations. "
      "docs/architecture.md's figure for this machine: about 1.2 GB/s allreduce busbw.\n\n",
      num(comm, "world_size"));
  o << "| op | size | iters | mean us | median us | algbw GB/s | busbw GB/s | median busbw | "
       "best busbw | median of 1.2 GB/s |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const json& r : comm["results"]) {
    const double size = num(r, "size");
    const std::string sz = size_text(size);
    o << fmt("| %s | %s | %.0f | %.1f | %.1f | %.3f | %.3f | %.3f | %.3f | %s |\n",
             str(r, "op").c_str(), sz.c_str(), num(r, "iters"), num(r, "time_us"),
             num(r, "median_time_us"), num(r, "algbw_gbps"), num(r, "busbw_gbps"),
             num(r, "median_busbw_gbps"), num(r, "best_busbw_gbps"),
             pct(num(r, "median_busbw_gbps") / 1.2).c_str());
  }
  return o.str() + "\n";
}

// Highest best-GFLOP/s GEMM of one dtype: {name, GFLOP/s}.
std::pair<std::string, double> best_gemm(const json& kernels, bool bf16) {
  std::pair<std::string, double> best{"none", 0};
  for (const BenchmarkRuns& r : group_benchmark_runs(kernels)) {
    const auto shape = parse_gemm_name(r.name);
    if (!shape || !r.error.empty() || (r.name.find("Bf16") != std::string::npos) != bf16) continue;
    const double g = rates(r.seconds, 2e-9 * shape->m * shape->n * shape->k).best;
    if (g > best.second) best = {r.name, g};
  }
  return best;
}

std::string summary_section(const ReportInputs& in) {
  std::ostringstream o;
  o << "## Summary against the targets of docs/architecture.md\n\nGEMM, AdamW, training "
       "steps and collectives are timed by the wall clock under the load shown above; the "
       "compute peaks are per CPU time. On a loaded machine the GEMM and training-step ratios "
       "are therefore lower bounds.\n\n| measure | value | divided by (same run) | ratio | "
       "target |\n|---|---|---|---|---|\n";
  const json& fp32 = in.probe.is_object() ? in.probe["fp32_fma_peak"] : json();
  const double one = num(fp32, "one_core_gflops"), all = num(fp32, "all_cores_gflops");
  o << fmt(
      "| fp32 FMA peak (%s, cpu time) | %.1f GFLOP/s a core, %.1f all cores (wall: %.1f, "
      "%.1f) | the architecture's ~230 a core | %s | (reference) |\n",
      str(fp32, "isa", "none").c_str(), one, all, num(fp32, "one_core_gflops_wall"),
      num(fp32, "all_cores_gflops_wall"), pct(one / 230).c_str());
  const auto [bf16_isa, bf16_gflops] = bf16_peak(in.probe);
  for (bool bf16 : {false, true}) {
    const auto [name, g] = best_gemm(in.kernels, bf16);
    const double peak = bf16 ? bf16_gflops : all;
    o << fmt(
        "| best %s GEMM (%s) | %.1f GFLOP/s | %s peak %.1f | %s | MFU >= 70%% of peak (whole "
        "model) |\n",
        bf16 ? "bf16" : "fp32", name.c_str(), g,
        bf16 ? bf16_isa.c_str() : str(fp32, "isa", "fp32").c_str(), peak,
        pct(peak > 0 ? g / peak : 0).c_str());
  }
  const json& st =
      in.probe.is_object() && in.probe.contains("stream") ? in.probe["stream"] : json();
  const double triad = st.is_object() ? num(st["triad"]["gbps"], "best") : 0;
  double adamw = 0;
  std::string adamw_name = "none";
  for (const BenchmarkRuns& r : group_benchmark_runs(in.adamw)) {
    if (r.name.rfind("BM_AdamWStep", 0) != 0 || !r.error.empty()) continue;
    for (const json& c : r.counters) {
      if (num(c, "bytes_per_second") / 1e9 > adamw)
        adamw = num(c, "bytes_per_second") / 1e9, adamw_name = r.name;
    }
  }
  o << fmt("| fastest AdamW step (%s) | %.2f GB/s | STREAM triad %.2f GB/s | %s | >= 70%% |\n",
           adamw_name.c_str(), adamw, triad, pct(triad > 0 ? adamw / triad : 0).c_str());
  double busbw = 0;
  std::string at = "none";
  if (in.comm.is_object() && in.comm.contains("results")) {
    for (const json& r : in.comm["results"]) {
      if (str(r, "op") == "allreduce" && num(r, "median_busbw_gbps") > busbw) {
        busbw = num(r, "median_busbw_gbps"), at = size_text(num(r, "size"));
      }
    }
  }
  o << fmt(
      "| allreduce busbw, best median over sizes (%s) | %.3f GB/s | the architecture's ~1.2 GB/s | "
      "%s | (reference) |\n",
      at.c_str(), busbw, pct(busbw / 1.2).c_str());
  o << train_summary_rows(in.train, in.probe) << "\n";
  return o.str();
}

}  // namespace

std::string render_results_md(const ReportInputs& in) {
  std::ostringstream o;
  o << "# Benchmark results\n\nWritten by `scripts/bench.sh` (`make bench`); do not edit by "
       "hand. Every ratio divides by a probe measured in the same run.\n\n";
  const std::string note = str(in.meta, "note", "");
  if (!note.empty()) o << "**" << note << "**\n\n";
  o << machine_section(in) << summary_section(in) << peaks_section(in.probe)
    << stream_section(in.probe) << train_section(in.train, in.probe) << gemm_section(in)
    << adamw_section(in) << comm_section(in.comm);
  return o.str();
}

}  // namespace zerotrain::bench
