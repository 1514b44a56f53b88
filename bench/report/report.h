// Renders bench/RESULTS.md from the JSON each bench step writes: zt_probe's
// peaks, Google Benchmark's --benchmark_out of the kernels and AdamW suites,
// zt_comm_bench's line, and scripts/bench.sh's meta (date, load, commit).
// Every number is put next to the probe it should be compared with, from the
// same run: GEMM GFLOP/s over the fp32 FMA (or bf16) peak, AdamW GB/s over
// STREAM triad, allreduce busbw over the 1.2 GB/s figure of docs/architecture.md, and the
// training step's model FLOP/s over the fp32 FMA peak (fp32) or the
// AVX512_BF16 dot peak and the AMX peak (bf16): MFU.
// GEMM GFLOP/s are recomputed from wall time (2·M·N·K / real_time), not the
// benchmark's cpu-time rate counter, because a loaded machine makes the two
// differ.
//
//   ReportInputs in{.meta = meta, .probe = probe, .kernels = k, .adamw = a, .comm = c};
//   std::string md = render_results_md(in);
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "probes/stats.h"

namespace zerotrain::bench {

// A null member means the step did not run or failed; its section says so.
struct ReportInputs {
  nlohmann::json meta = nullptr, probe = nullptr, kernels = nullptr, adamw = nullptr,
                 comm = nullptr;
  nlohmann::json train = nullptr;  // array of zt_train_bench's JSON lines
};

std::string render_results_md(const ReportInputs& in);

// The repetitions of one Google Benchmark case ("BM_MatmulF32/1024/2304/768/0/1").
struct BenchmarkRuns {
  std::string name, label, error;
  std::vector<double> seconds;           // real time per iteration, one per repetition
  std::vector<nlohmann::json> counters;  // the run objects, for named counters
};

// Groups the "iteration" runs of --benchmark_out JSON by run_name, in order.
std::vector<BenchmarkRuns> group_benchmark_runs(const nlohmann::json& doc);

// M, N, K of a BM_Matmul* name; nullopt for other names.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
};
std::optional<GemmShape> parse_gemm_name(const std::string& name);

// Model-FLOPs utilisation of one zt_train_bench case against the all-cores
// CPU-time peaks of the same run; 0 where a peak was not measured.
struct Mfu {
  double flops = 0;     // achieved model FLOP/s (median step)
  std::string ref_isa;  // fp32: the FMA peak's ISA; bf16: the AVX512_BF16 dot peak's
  double ref_peak = 0;  // FLOP/s of that peak
  double ref = 0;       // flops / ref_peak: docs/architecture.md's MFU
  double amx_peak = 0;  // bf16 only: the AMX-BF16 tile peak (FLOP/s)
  double amx = 0;       // flops / amx_peak
};
Mfu train_mfu(const nlohmann::json& train_case, const nlohmann::json& probe);

}  // namespace zerotrain::bench
