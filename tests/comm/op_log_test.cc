// The comms logger: DeepSpeed's bandwidth definitions (utils/comms_logging.py,
// after nccl-tests), its trimmed mean and size strings, and live records at
// 2 ranks that match what was issued and the communicator's own counters.
#include "comm/op_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "rank_threads.h"

namespace zerotrain::comm {
namespace {

using ::testing::HasSubstr;
using testutil::run_ranks;

// 1 MiB in 2 ms at 4 ranks, by DeepSpeed's definitions (bytes/ms x 8 / 1e6
// = Gbps): all-reduce tput 2S/t, bus S/t * 2(n-1)/n; all-gather and
// reduce-scatter count n times the per-rank size, bus (n-1)/n of it;
// broadcast S/t for both.
TEST(OpLog, BandwidthFollowsDeepSpeedsDefinitions) {
  const uint64_t s = 1 << 20;
  const double t = 2.0, mib_per_ms_gbps = 1048576.0 / 2.0 * 8 / 1e6;  // 4.194304
  auto [ar_alg, ar_bus] = op_bandwidth_gbps(OpType::kAllreduce, s, t, 4);
  EXPECT_DOUBLE_EQ(ar_alg, 2 * mib_per_ms_gbps);
  EXPECT_DOUBLE_EQ(ar_bus, mib_per_ms_gbps * 1.5);
  auto [ag_alg, ag_bus] = op_bandwidth_gbps(OpType::kAllgather, s, t, 4);
  EXPECT_DOUBLE_EQ(ag_alg, 4 * mib_per_ms_gbps);
  EXPECT_DOUBLE_EQ(ag_bus, 3 * mib_per_ms_gbps);
  auto [rs_alg, rs_bus] = op_bandwidth_gbps(OpType::kReduceScatter, s, t, 4);
  EXPECT_DOUBLE_EQ(rs_alg, ag_alg);
  EXPECT_DOUBLE_EQ(rs_bus, ag_bus);
  auto [bc_alg, bc_bus] = op_bandwidth_gbps(OpType::kBroadcast, s, t, 4);
  EXPECT_DOUBLE_EQ(bc_alg, mib_per_ms_gbps);
  EXPECT_DOUBLE_EQ(bc_bus, mib_per_ms_gbps);
}

TEST(OpLog, TrimMeanDropsATenthAtEachEnd) {
  std::vector<double> v = {100, 2, 3, 4, 5, 6, 7, 8, 9, 1};  // 10 values: k = 1 each side
  EXPECT_DOUBLE_EQ(trim_mean(v, 0.1), (2 + 3 + 4 + 5 + 6 + 7 + 8 + 9) / 8.0);
  EXPECT_DOUBLE_EQ(trim_mean({3, 5}, 0.1), 4.0);  // round(0.2) = 0: nothing dropped
  EXPECT_DOUBLE_EQ(trim_mean({}, 0.1), 0.0);
}

// Python's convert_size: floor(log_1024), round to 2 decimals, str().
TEST(OpLog, SizesPrintAsDeepSpeedPrintsThem) {
  EXPECT_EQ(deepspeed_size(0), "0B");
  EXPECT_EQ(deepspeed_size(1000), "1000.0 B");
  EXPECT_EQ(deepspeed_size(1024), "1.0 KB");
  EXPECT_EQ(deepspeed_size(1536), "1.5 KB");
  EXPECT_EQ(deepspeed_size(4000), "3.91 KB");
  EXPECT_EQ(deepspeed_size(3 << 20), "3.0 MB");
}

TEST(OpLog, SummaryHasDeepSpeedsColumnsAndARowPerOpAndSize) {
  OpLog log(2);
  log.add(OpType::kAllreduce, 4096, 1.0);
  log.add(OpType::kAllreduce, 4096, 3.0);
  log.add(OpType::kAllgather, 512, 0.5);
  const std::string s = log.summary();
  EXPECT_THAT(s, HasSubstr("Comm. Op            Message Size        Count               "
                           "Total Latency(ms)   Avg Latency(ms)     tput_avg (Gbps)     "
                           "busbw_avg (Gbps)    \n"));
  // all_reduce 4 KiB: total 4 ms, mean 2 ms; tput 2*4096/t*8/1e6 averaged
  // over the two ops (0.0655 and 0.0218), bus half of it at 2 ranks.
  EXPECT_THAT(s,
              HasSubstr("all_reduce\n                    4.0 KB              2                   "
                        "4.00                2.00                0.04                0.02"));
  EXPECT_THAT(s, HasSubstr("all_gather\n                    512.0 B             1"));
}

// Live at 2 ranks: what each rank issued, at DeepSpeed's message sizes, and
// the same number of calls as the communicator's own counters.
TEST(OpLog, RecordsEveryCollectiveWithItsMessageSize) {
  run_ranks(2, [](Communicator& c) {
    c.reset_counters();
    c.enable_op_log({}, /*verbose=*/false);
    std::vector<float> v(1000, 1.0f);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(c.allreduce(std::span<float>(v), ReduceOp::kSum).ok());
    std::vector<std::byte> in(256), out(512);
    for (int i = 0; i < 2; ++i)
      ASSERT_TRUE(c.allgather(std::span<const std::byte>(in), std::span<std::byte>(out)).ok());
    ASSERT_TRUE(c.reduce_scatter(std::span<const float>(v.data(), 256),
                                 std::span<float>(v.data() + 512, 128), ReduceOp::kSum)
                    .ok());
    ASSERT_TRUE(c.barrier().ok());
    const OpLog log = *c.op_log();
    const auto& r = log.records();
    ASSERT_EQ(r.at(OpType::kAllreduce).size(), 1u);
    EXPECT_EQ(r.at(OpType::kAllreduce).at(4000).count, 3);
    EXPECT_EQ(r.at(OpType::kAllgather).at(256).count, 2);  // one rank's part
    EXPECT_EQ(r.at(OpType::kReduceScatter).at(512).count, 1);
    EXPECT_EQ(r.at(OpType::kBarrier).at(0).count, 1);
    const CommCounters k = c.counters();
    for (const auto& [op, sizes] : r) {
      int calls = 0;
      for (const auto& [bytes, rec] : sizes) {
        calls += rec.count;
        for (double ms : rec.latency_ms) EXPECT_GT(ms, 0.0);
      }
      EXPECT_EQ(static_cast<uint64_t>(calls), k.op(op).calls) << op_type_name(op);
    }
  });
}

TEST(OpLog, OnlyTheListedOpsAreTimed) {
  run_ranks(2, [](Communicator& c) {
    c.enable_op_log({OpType::kAllgather}, false);
    std::vector<float> v(64, 1.0f);
    ASSERT_TRUE(c.allreduce(std::span<float>(v), ReduceOp::kSum).ok());
    std::vector<std::byte> in(8), out(16);
    ASSERT_TRUE(c.allgather(std::span<const std::byte>(in), std::span<std::byte>(out)).ok());
    const OpLog log = *c.op_log();
    EXPECT_EQ(log.records().count(OpType::kAllreduce), 0u);
    EXPECT_EQ(log.records().at(OpType::kAllgather).at(8).count, 1);
  });
}

}  // namespace
}  // namespace zerotrain::comm
