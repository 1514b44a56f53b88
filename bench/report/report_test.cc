// Tests of the RESULTS.md renderer: Google Benchmark JSON grouping, GEMM
// name parsing, and ratios computed against the probes of the same run.
#include "report/report.h"

#include <gtest/gtest.h>

namespace zerotrain::bench {
namespace {

using nlohmann::json;

json run(const std::string& name, double real_time, const std::string& unit, json extra = {}) {
  json r = {{"name", name},
            {"run_name", name},
            {"run_type", "iteration"},
            {"real_time", real_time},
            {"time_unit", unit}};
  for (auto& [k, v] : extra.items()) r[k] = v;
  return r;
}

json probe() {
  return {{"machine", {{"model", "Test CPU"}, {"logical_cpus", 2}}},
          {"compute",
           {{"avx512_fma",
             {{"available", true},
              {"one_core_gflops", {{"best", 100.0}, {"median", 90.0}, {"spread", 0.2}}},
              {"all_cores_gflops", {{"best", 200.0}, {"threads", 2}, {"per_core_best", 100.0}}}}},
            {"amx_bf16", {{"available", false}, {"reason", "AMX-BF16 not in CPUID"}}}}},
          {"fp32_fma_peak", {{"isa", "avx512_fma"}, {"all_cores_gflops", 200.0}}},
          {"bf16_dot_peak", {{"isa", "avx512_bf16"}, {"all_cores_gflops", 400.0}}},
          {"bf16_amx_peak", {{"isa", nullptr}}},
          {"stream",
           {{"array_bytes", 1 << 30},
            {"threads", 2},
            {"copy", {{"gbps", {{"best", 8.0}}}, {"gbps_write_allocate", {{"best", 12.0}}}}},
            {"scale", {{"gbps", {{"best", 8.0}}}, {"gbps_write_allocate", {{"best", 12.0}}}}},
            {"add", {{"gbps", {{"best", 9.0}}}, {"gbps_write_allocate", {{"best", 12.0}}}}},
            {"triad", {{"gbps", {{"best", 10.0}}}, {"gbps_write_allocate", {{"best", 13.0}}}}},
            {"triad_sweep", json::array()}}}};
}

TEST(Report, GroupsRepetitionsAndSkipsAggregates) {
  json doc = {{"benchmarks",
               {run("BM_A", 2.0, "ms"),
                run("BM_A", 3.0, "ms"),
                {{"name", "BM_A_mean"}, {"run_name", "BM_A"}, {"run_type", "aggregate"}},
                run("BM_B", 5.0, "us")}}};
  const auto runs = group_benchmark_runs(doc);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].name, "BM_A");
  ASSERT_EQ(runs[0].seconds.size(), 2u);
  EXPECT_DOUBLE_EQ(runs[0].seconds[1], 3e-3);
  EXPECT_DOUBLE_EQ(runs[1].seconds[0], 5e-6);
}

TEST(Report, ParsesGemmNames) {
  const auto g = parse_gemm_name("BM_MatmulBf16/1024/2304/768/0/1");
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->m, 1024);
  EXPECT_EQ(g->n, 2304);
  EXPECT_EQ(g->k, 768);
  EXPECT_FALSE(g->trans_a);
  EXPECT_TRUE(g->trans_b);
  EXPECT_FALSE(parse_gemm_name("BM_LayerNorm").has_value());
}

TEST(Report, GemmRatioIsWallGflopsOverPeakOfSameRun) {
  // 2*1000*1000*1000 FLOP in 20 ms = 100 GFLOP/s = 50% of the 200 fp32 peak;
  // the bf16 case divides by the 400 GFLOP/s dot peak (no AMX): 25%.
  json kernels = {{"benchmarks",
                   {run("BM_MatmulF32/1000/1000/1000/0/0", 20.0, "ms", {{"label", "onednn"}}),
                    run("BM_MatmulBf16/1000/1000/1000/0/0", 20.0, "ms")}}};
  const std::string md = render_results_md({.probe = probe(), .kernels = kernels});
  EXPECT_NE(md.find("| BM_MatmulF32/1000/1000/1000/0/0 | onednn | 20.00 | 100.0 | ±0% | 50% |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 100.0 | ±0% | 25% |"), std::string::npos) << md;
  EXPECT_NE(md.find("amx_bf16 | not available: AMX-BF16 not in CPUID"), std::string::npos);
  EXPECT_NE(md.find("| best fp32 GEMM (BM_MatmulF32/1000/1000/1000/0/0) | 100.0 GFLOP/s | "
                    "avx512_fma peak 200.0 | 50% |"),
            std::string::npos)
      << md;
}

TEST(Report, AdamwRatiosUseStreamTriad) {
  json adamw = {{"benchmarks",
                 {run("BM_AdamWStep/2/0/real_time", 50.0, "ms",
                      {{"bytes_per_second", 7.0e9}, {"of_triad", 0.8}, {"label", "avx512"}})}}};
  const std::string md = render_results_md({.probe = probe(), .adamw = adamw});
  // 7 GB/s over triad 10 (70%) and over 13 with write-allocate (54%).
  EXPECT_NE(md.find("| BM_AdamWStep/2/0 | avx512 | 7.00 | ±0% | 80% | 70% | 54% |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| fastest AdamW step (BM_AdamWStep/2/0) | 7.00 GB/s | STREAM triad 10.00 GB/s "
                    "| 70% | >= 70% |"),
            std::string::npos)
      << md;
}

TEST(Report, CommRowsAndMissingSections) {
  json comm = {{"world_size", 2},
               {"results",
                {{{"op", "allreduce"},
                  {"size", 4 << 20},
                  {"iters", 5},
                  {"time_us", 5000.0},
                  {"median_time_us", 4000.0},
                  {"algbw_gbps", 0.839},
                  {"busbw_gbps", 0.6},
                  {"median_busbw_gbps", 0.6},
                  {"best_busbw_gbps", 0.9}}}}};
  const std::string md = render_results_md({.meta = {{"note", "Provisional."}}, .comm = comm});
  EXPECT_NE(
      md.find("| allreduce | 4 MiB | 5 | 5000.0 | 4000.0 | 0.839 | 0.600 | 0.600 | 0.900 | 50% |"),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("**Provisional.**"), std::string::npos);
  EXPECT_NE(md.find("allreduce busbw, best median over sizes (4 MiB) | 0.600 GB/s"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("(zt_kernels_bench did not run)"), std::string::npos);
  EXPECT_NE(md.find("(zt_probe did not run)"), std::string::npos);
}

}  // namespace
}  // namespace zerotrain::bench
