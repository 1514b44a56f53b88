// Tests of the comm bench arithmetic: bus factors, wire bytes (against the
// ring formulas of docs/algorithms.md), size sweep and check values.
#include "comm/bus_math.h"

#include <gtest/gtest.h>

namespace zerotrain::bench {
namespace {

TEST(BusMath, FactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::kAllreduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::kAllreduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::kAllgather, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::kAllreduce, 1), 0.0);
}

TEST(BusMath, CountRoundsToEqualChunks) {
  EXPECT_EQ(bench_count(BenchOp::kAllreduce, 4096, 3, 4), 1024);
  EXPECT_EQ(bench_count(BenchOp::kReduceScatter, 4096, 3, 4), 1023);
  EXPECT_EQ(bench_count(BenchOp::kAllgather, 4096, 2, 4), 1024);
  EXPECT_EQ(bench_count(BenchOp::kAllgather, 4, 4, 4), 4);  // at least one element each
}

TEST(BusMath, AllreduceWireBytesDivisibleIsTextbook) {
  // 2 (N-1)/N B each way when N divides the count.
  for (int n : {2, 4}) {
    for (int r = 0; r < n; ++r) {
      const WireBytes w = expected_wire_bytes(BenchOp::kAllreduce, 1024, 4, n, r);
      EXPECT_EQ(w.sent, 2u * (n - 1) * 4096 / n);
      EXPECT_EQ(w.received, w.sent);
    }
  }
}

TEST(BusMath, AllreduceWireBytesUnevenChunks) {
  // count 10 over 3 ranks: chunks 4, 3, 3 elements (16, 12, 12 B); B = 40.
  // sent(r) = 2B - c_r - c_{r+1}; received(r) = 2B - c_{r-1} - c_r.
  const WireBytes w0 = expected_wire_bytes(BenchOp::kAllreduce, 10, 4, 3, 0);
  EXPECT_EQ(w0.sent, 80u - 16 - 12);
  EXPECT_EQ(w0.received, 80u - 12 - 16);
  const WireBytes w2 = expected_wire_bytes(BenchOp::kAllreduce, 10, 4, 3, 2);
  EXPECT_EQ(w2.sent, 80u - 12 - 16);
  EXPECT_EQ(w2.received, 80u - 12 - 12);
  // Summed over ranks the job moves 2 (N-1) B.
  uint64_t total = 0;
  for (int r = 0; r < 3; ++r) total += expected_wire_bytes(BenchOp::kAllreduce, 10, 4, 3, r).sent;
  EXPECT_EQ(total, 2u * 2 * 40);
}

TEST(BusMath, ScatterGatherWireBytes) {
  const WireBytes rs = expected_wire_bytes(BenchOp::kReduceScatter, 1024, 4, 4, 1);
  EXPECT_EQ(rs.sent, 3u * 1024);
  EXPECT_EQ(rs.received, 3u * 1024);
  const WireBytes ag = expected_wire_bytes(BenchOp::kAllgather, 1024, 2, 2, 0);
  EXPECT_EQ(ag.sent, 1024u);
  EXPECT_EQ(expected_wire_bytes(BenchOp::kAllgather, 1024, 4, 1, 0).sent, 0u);
}

TEST(BusMath, WireBytesCheckIsExact) {
  const WireBytes per_call{.sent = 4096, .received = 4096};
  EXPECT_TRUE(
      check_wire_bytes("allreduce", {.calls = 3, .sent = 12288, .received = 12288}, 3, per_call)
          .ok());
  const Status s = check_wire_bytes("allreduce of 16384 B on rank 1",
                                    {.calls = 3, .sent = 12289, .received = 12288}, 3, per_call);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(),
            "allreduce of 16384 B on rank 1: counters say 12289 B sent, 12288 B received in 3 "
            "calls; formula 12288 and 12288 B in 3");
  EXPECT_FALSE(
      check_wire_bytes("x", {.calls = 2, .sent = 8192, .received = 8192}, 3, per_call).ok());
}

TEST(BusMath, SizeSweepIncludesEnds) {
  const std::vector<int64_t> s = size_sweep(4096, int64_t{256} << 20, 4);
  ASSERT_EQ(s.size(), 9u);
  EXPECT_EQ(s.front(), 4096);
  EXPECT_EQ(s.back(), int64_t{256} << 20);
  EXPECT_TRUE(size_sweep(0, 10, 2).empty());
}

TEST(BusMath, CheckValuesAreExactSums) {
  for (int n : {1, 2, 5}) {
    for (int64_t g : {0, 63, 64, 1000001}) {
      float sum = 0;
      for (int r = 0; r < n; ++r) sum += reduce_input_value(r, g, 7);
      EXPECT_EQ(sum, reduce_expected_value(n, g, 7));
    }
  }
  // Iterations differ, so a stale buffer fails the check.
  EXPECT_NE(reduce_expected_value(2, 5, 0), reduce_expected_value(2, 5, 1));
  EXPECT_EQ(gather_value(3, 10, 0), 11.0f + 3.0f);
}

}  // namespace
}  // namespace zerotrain::bench
