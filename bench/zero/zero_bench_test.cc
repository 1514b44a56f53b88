// The ZeRO bench's parts: the recording communicator forwards exactly and
// records what a step issues; a replay moves the same bytes; the null
// communicator moves nothing; a tiny case yields consistent numbers; the
// section renders rows and the overlap ratio.
#include "zero_bench.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench_comms.h"
#include "comm/rank_threads.h"
#include "zero_report.h"

namespace zerotrain::bench {
namespace {

TEST(BenchComms, RecordingForwardsAndReplayMovesTheSameBytes) {
  comm::testutil::run_ranks(2, [](comm::Communicator& gloo) {
    RecordingCommunicator rec(&gloo);
    std::vector<float> v(6, float(gloo.rank() + 1)), mine(3);
    gloo.reset_counters();
    rec.start_recording();
    ASSERT_TRUE(rec.allreduce(std::span<float>(v), comm::ReduceOp::kSum).ok());
    ASSERT_TRUE(
        rec.reduce_scatter(std::span<const float>(v), std::span<float>(mine), comm::ReduceOp::kSum)
            .ok());
    std::vector<RecordedOp> ops = rec.stop_recording();
    EXPECT_EQ(v, std::vector<float>(6, 3.0f)) << "1 + 2 on every element";
    EXPECT_EQ(mine, std::vector<float>(3, 6.0f));
    ASSERT_EQ(ops.size(), 2u);
    EXPECT_EQ(ops[0].type, comm::OpType::kAllreduce);
    EXPECT_EQ(ops[0].input_bytes, 24u);
    EXPECT_EQ(ops[1].type, comm::OpType::kReduceScatter);
    EXPECT_EQ(ops[1].output_bytes, 12u);
    const comm::CommCounters direct = gloo.counters();
    gloo.reset_counters();
    ASSERT_TRUE(replay_collectives(ops, &gloo).ok());
    EXPECT_EQ(gloo.counters().total().bytes_sent, direct.total().bytes_sent);
    EXPECT_GT(direct.total().bytes_sent, 0u);
  });
}

TEST(BenchComms, NullCommunicatorActsAsIfEveryRankHeldItsData) {
  NullCommunicator null(1, 4);
  std::vector<float> v = {1, 2, 3, 4};
  ASSERT_TRUE(null.allreduce(std::span<float>(v), comm::ReduceOp::kSum).ok());
  EXPECT_EQ(v, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(null.world_size(), 4);
  // As if every rank held this rank's data: finite values for the compute.
  std::vector<float> all(8, -1.0f);
  ASSERT_TRUE(null.allgather(std::span<const float>(v.data(), 2), all).ok());
  EXPECT_EQ(all, (std::vector<float>{1, 2, 1, 2, 1, 2, 1, 2}));
  std::vector<float> mine(1, 0.0f);
  NullCommunicator third(2, 4);
  ASSERT_TRUE(third.reduce_scatter(std::span<const float>(v), mine, comm::ReduceOp::kSum).ok());
  EXPECT_EQ(mine[0], 3.0f);
}

TEST(ZeroBench, TinyCaseDecomposesIntoComputeAndCommunication) {
  std::vector<ZeroResult> got(2);
  comm::testutil::run_ranks(2, [&](comm::Communicator& gloo) {
    ZeroCase c{.model = "gpt2-tiny",
               .stage = 2,
               .overlap = true,
               .decompose = true,
               .T = 32,
               .bucket = 100'000,
               .warmup = 0,
               .steps = 1};
    auto r = run_zero_case(c, &gloo);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    got[gloo.rank()] = *r;
  });
  const ZeroResult& r = got[0];
  ASSERT_EQ(r.step_seconds.size(), 1u);
  EXPECT_GT(r.step_seconds[0], 0);
  EXPECT_GT(r.compute_seconds[0], 0);
  EXPECT_GT(r.comm_seconds[0], 0);
  EXPECT_EQ(r.compute_skipped, 0);
  // Column buckets of 50,000 a shard over Psi/2: several reduce-scatters
  // and all-gathers, plus the engine's norm and overflow all-reduces.
  EXPECT_GT(r.collectives_per_step, 4);
  const uint64_t psi = static_cast<uint64_t>(r.numel);
  EXPECT_GE(r.wire_bytes_sent, (psi / 2) * 2 + (psi / 2) * 2)
      << "stage 2 at bf16: Psi/2 reduce-scattered and Psi/2 all-gathered, both in bf16";
  ASSERT_EQ(r.vm_hwm_mib.size(), 2u);
  EXPECT_GT(r.vm_hwm_mib[1], 1.0);
  EXPECT_GT(r.device_bytes, 0);
  EXPECT_EQ(r.host_bytes, 0);
  nlohmann::json j = zero_result_json(r);
  EXPECT_NEAR(j["overlap_ratio"].get<double>(),
              r.step_seconds[0] / std::max(r.compute_seconds[0], r.comm_seconds[0]), 1e-9);
  // The CPU floor: both phases used CPU, shared by the ranks' cores.
  ASSERT_EQ(r.compute_cpu_seconds.size(), 1u);
  ASSERT_EQ(r.comm_cpu_seconds.size(), 1u);
  EXPECT_GT(r.compute_cpu_seconds[0], 0);
  const double per_rank = std::max(1.0, double(r.cores) / 2);
  EXPECT_NEAR(j["cpu_floor_seconds"].get<double>(),
              (r.compute_cpu_seconds[0] + r.comm_cpu_seconds[0]) / per_rank, 1e-12);
  EXPECT_NEAR(j["floor_ratio"].get<double>(),
              r.step_seconds[0] / std::max({r.compute_seconds[0], r.comm_seconds[0],
                                            j["cpu_floor_seconds"].get<double>()}),
              1e-9);
}

TEST(ZeroReport, RowsAndOverlapRatioAgainstTheInlineTwin) {
  nlohmann::json inline_case = {{"stage", 2},
                                {"offload", false},
                                {"overlap_comm", false},
                                {"B", 1},
                                {"T", 100},
                                {"ranks", 2},
                                {"step_seconds", {{"median", 0.5}}}};
  nlohmann::json overlap = inline_case;
  overlap["overlap_comm"] = true;
  overlap["step_seconds"] = {{"median", 0.4}};
  overlap["compute_seconds"] = {{"median", 0.38}};
  overlap["comm_seconds"] = {{"median", 0.2}};
  overlap["overlap_ratio"] = 0.4 / 0.38;
  overlap["cpu_floor_seconds"] = 0.5;
  overlap["floor_ratio"] = 0.4 / 0.5;
  const std::string md = zero_section(nlohmann::json::array({inline_case, overlap}));
  EXPECT_NE(md.find(kZeroSectionBegin), std::string::npos);
  EXPECT_NE(md.find(kZeroSectionEnd), std::string::npos);
  EXPECT_NE(md.find("| 2 | none | off | 500 | 400 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2 | none | 400 | 500 | 380 | 200 | 1.05 | 0.69 | 0.80 | <= 1.10 | 500 | "
                    "0.80 |"),
            std::string::npos)
      << md;
  EXPECT_NE(zero_section(nlohmann::json::array()).find("did not run"), std::string::npos);
}

}  // namespace
}  // namespace zerotrain::bench
