// Tests of the RESULTS.md renderer: Google Benchmark JSON grouping, GEMM
// name parsing, and ratios computed against the probes of the same run
// (GEMM, AdamW, collectives, training-step MFU).
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

json train_case(const std::string& model, const std::string& precision, int ranks, int threads,
                double model_flops) {
  return {{"model", model},
          {"precision", precision},
          {"ranks", ranks},
          {"threads", threads},
          {"B", 8},
          {"T", 128},
          {"step_seconds", {{"median", 0.25}, {"spread", 0.1}}},
          {"tokens_per_s", {{"median", 4096.0}}},
          {"model_flops", {{"median", model_flops}}},
          {"phase_ms", {{"forward", 80.0}, {"backward", 160.0}, {"reduce", 2.0}, {"step", 8.0}}},
          {"adamw_gbps", 5.0}};
}

TEST(Report, TrainMfuDividesByTheSameRunsPeaks) {
  json p = probe();
  p["bf16_amx_peak"] = {{"isa", "amx_bf16"}, {"all_cores_gflops", 4000.0}};
  // fp32: 100 GFLOP/s over the 200 GFLOP/s FMA peak.
  const Mfu f = train_mfu(train_case("gpt2-tiny", "fp32", 1, 2, 100e9), p);
  EXPECT_EQ(f.ref_isa, "avx512_fma");
  EXPECT_DOUBLE_EQ(f.ref, 0.5);
  EXPECT_DOUBLE_EQ(f.amx, 0);
  // bf16: 120 GFLOP/s over the 400 dot peak (30%) and the 4000 AMX peak (3%).
  const Mfu b = train_mfu(train_case("gpt2-tiny", "bf16", 1, 2, 120e9), p);
  EXPECT_EQ(b.ref_isa, "avx512_bf16");
  EXPECT_DOUBLE_EQ(b.ref_peak, 400e9);
  EXPECT_DOUBLE_EQ(b.ref, 0.3);
  EXPECT_DOUBLE_EQ(b.amx, 0.03);
  // No probe: no ratio rather than a division by zero.
  EXPECT_DOUBLE_EQ(train_mfu(train_case("m", "fp32", 1, 2, 1e9), nullptr).ref, 0);
}

TEST(Report, TrainSectionRowsAndBestCaseSummary) {
  json p = probe();
  p["bf16_amx_peak"] = {{"isa", "amx_bf16"}, {"all_cores_gflops", 4000.0}};
  json train = json::array({train_case("gpt2-tiny", "fp32", 1, 2, 100e9),
                            train_case("gpt2-tiny", "fp32", 2, 1, 150e9),
                            train_case("gpt2-tiny", "bf16", 1, 2, 120e9)});
  const std::string md = render_results_md({.probe = p, .train = train});
  EXPECT_NE(md.find("## Training step (MFU, zt_train_bench)"), std::string::npos) << md;
  // AdamW 5 GB/s over STREAM triad 10: 50%; spread 0.1 -> ±5%.
  EXPECT_NE(md.find("| gpt2-tiny | fp32 | 1 × 2 | 8 × 128 | 250.0 | ±5% | 4096 | 100.0 | 50% | "
                    "avx512_fma 200.0 | — | 80.0 / 160.0 / 2.0 / 8.0 | 5.00 (50%) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| gpt2-tiny | bf16 | 1 × 2 | 8 × 128 | 250.0 | ±5% | 4096 | 120.0 | 30% | "
                    "avx512_bf16 400.0 | 3% |"),
            std::string::npos)
      << md;
  // Summary: the faster fp32 case (2 x 1, 150 GFLOP/s = 75% of 200) is the one shown.
  EXPECT_NE(md.find("| training step MFU, best case (gpt2-tiny fp32, 2 × 1, B 8 × T 128) | 150.0 "
                    "GFLOP/s model, 4096 tokens/s | avx512_fma peak 200.0 | 75% | >= 70% |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| training step MFU, best case (gpt2-tiny bf16, 1 × 2, B 8 × T 128) | 120.0 "
                    "GFLOP/s model, 4096 tokens/s | avx512_bf16 peak 400.0 (AMX peak 4000.0: "
                    "3%) | 30% | >= 70% |"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("best case (gpt2-tiny fp32, 1 × 2"), std::string::npos) << md;
}

TEST(Report, TrainSectionSaysWhenTheBenchDidNotRun) {
  const std::string md = render_results_md({.probe = probe()});
  EXPECT_NE(md.find("(zt_train_bench did not run)"), std::string::npos) << md;
  EXPECT_EQ(md.find("training step MFU"), std::string::npos) << md;
}

}  // namespace
}  // namespace zerotrain::bench
