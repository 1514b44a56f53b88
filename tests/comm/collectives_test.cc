// Every collective at world sizes 1-4 over real Gloo TCP (one thread per
// rank), element counts {0, 1, odd, not divisible, large}, fp32 and bf16,
// checked against closed forms; byte counters checked against the formulas
// of docs/algorithms.md.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>

#include "comm/gloo/reduce.h"
#include "core/range.h"
#include "rank_threads.h"

namespace zerotrain::comm {
namespace {

using testutil::allreduce_received;
using testutil::allreduce_sent;
using testutil::run_ranks;

const size_t kCounts[] = {0, 1, 7, 13, 1 << 20};

class Collectives : public ::testing::TestWithParam<int> {};

// Rank r holds r + (i % 7): the sum is n(n-1)/2 + n (i % 7) (exact in bf16
// for n <= 4: at most 6 + 24 = 30).
float input_value(int r, size_t i) { return static_cast<float>(r) + static_cast<float>(i % 7); }
float sum_value(int n, size_t i) {
  return static_cast<float>(n * (n - 1) / 2 + n * static_cast<int>(i % 7));
}

TEST_P(Collectives, AllreduceSumAvgMaxFp32MatchClosedFormAndByteFormula) {
  const int n = GetParam();
  run_ranks(n, [n](Communicator& c) {
    const int r = c.rank();
    for (size_t count : kCounts) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
        std::vector<float> v(count);
        for (size_t i = 0; i < count; ++i) v[i] = input_value(r, i);
        c.reset_counters();
        Status st = c.allreduce(std::span<float>(v), op);
        ASSERT_TRUE(st.ok()) << st.to_string();
        for (size_t i = 0; i < count; ++i) {
          float want = op == ReduceOp::kSum   ? sum_value(n, i)
                       : op == ReduceOp::kAvg ? sum_value(n, i) / static_cast<float>(n)
                                              : input_value(n - 1, i);
          ASSERT_EQ(v[i], want) << "count " << count << " i " << i << " op " << reduce_op_name(op);
        }
        OpCounters k = c.counters().op(OpType::kAllreduce);
        EXPECT_EQ(k.calls, 1u);
        EXPECT_EQ(k.bytes_sent, allreduce_sent(count, 4, n, r)) << "count " << count;
        EXPECT_EQ(k.bytes_received, allreduce_received(count, 4, n, r)) << "count " << count;
        if (count % n == 0) {  // the textbook form 2(N-1)/N * bytes
          EXPECT_EQ(k.bytes_sent, 2 * (n - 1) * count * 4 / n);
        }
      }
    }
  });
}

TEST_P(Collectives, AllreduceBf16AndFp16SumInFp32WithRoundToNearestEven) {
  const int n = GetParam();
  run_ranks(n, [n](Communicator& c) {
    for (DType dt : {DType::kBFloat16, DType::kFloat16}) {
      auto to16 = dt == DType::kBFloat16 ? fp32_to_bf16_bits : fp32_to_fp16_bits;
      auto from16 = dt == DType::kBFloat16 ? bf16_bits_to_fp32 : fp16_bits_to_fp32;
      for (size_t count : kCounts) {
        std::vector<uint16_t> v(count);
        for (size_t i = 0; i < count; ++i) v[i] = to16(input_value(c.rank(), i));
        c.reset_counters();
        ASSERT_TRUE(c.allreduce(std::span<uint16_t>(v), dt, ReduceOp::kAvg).ok());
        for (size_t i = 0; i < count; ++i)
          ASSERT_EQ(v[i], to16(sum_value(n, i) / static_cast<float>(n))) << "i " << i;
        EXPECT_EQ(c.counters().op(OpType::kAllreduce).bytes_sent,
                  allreduce_sent(count, 2, n, c.rank()));
      }
      // 256 + 1 is not representable in bf16: each ring step rounds to even.
      if (dt == DType::kBFloat16 && n == 2) {
        std::vector<uint16_t> w = {to16(c.rank() == 0 ? 256.0f : 1.0f)};
        ASSERT_TRUE(c.allreduce(std::span<uint16_t>(w), dt, ReduceOp::kSum).ok());
        EXPECT_EQ(from16(w[0]), 256.0f);
      }
    }
  });
}

TEST_P(Collectives, ReduceScatterGivesEachRankItsReducedChunk) {
  const int n = GetParam();
  run_ranks(n, [n](Communicator& c) {
    const int r = c.rank();
    for (size_t chunk : {size_t{0}, size_t{1}, size_t{7}, size_t{13}, size_t{1} << 18}) {
      std::vector<float> in(chunk * n), out(chunk, -1.0f);
      for (size_t j = 0; j < in.size(); ++j) in[j] = input_value(r, j);
      c.reset_counters();
      ASSERT_TRUE(
          c.reduce_scatter(std::span<const float>(in), std::span<float>(out), ReduceOp::kSum).ok());
      for (size_t i = 0; i < chunk; ++i) ASSERT_EQ(out[i], sum_value(n, r * chunk + i));
      OpCounters k = c.counters().op(OpType::kReduceScatter);
      EXPECT_EQ(k.bytes_sent, (n - 1) * chunk * 4);
      EXPECT_EQ(k.bytes_received, (n - 1) * chunk * 4);
      // In place: output is this rank's chunk of the input.
      std::span<float> own(in.data() + r * chunk, chunk);
      for (size_t j = 0; j < in.size(); ++j) in[j] = input_value(r, j);
      ASSERT_TRUE(c.reduce_scatter(std::span<const float>(in), own, ReduceOp::kAvg).ok());
      for (size_t i = 0; i < chunk; ++i)
        ASSERT_EQ(own[i], sum_value(n, r * chunk + i) / static_cast<float>(n));
    }
  });
}

TEST_P(Collectives, ReduceScatterOfOddCountPadsLastShard) {
  const int n = GetParam();
  run_ranks(n, [n](Communicator& c) {
    const size_t count = 10;  // not divisible by 3 or 4
    std::vector<uint16_t> in(padded_numel(count, n), fp32_to_bf16_bits(0.0f));
    for (size_t j = 0; j < count; ++j) in[j] = fp32_to_bf16_bits(input_value(c.rank(), j));
    std::vector<uint16_t> out(shard_size(count, n));
    ASSERT_TRUE(c.reduce_scatter(std::span<const uint16_t>(in), std::span<uint16_t>(out),
                                 DType::kBFloat16, ReduceOp::kSum)
                    .ok());
    Range mine = rank_range(count, n, c.rank());
    for (size_t i = 0; i < out.size(); ++i) {
      float want = static_cast<int64_t>(i) < mine.count ? sum_value(n, mine.offset + i) : 0.0f;
      ASSERT_EQ(bf16_bits_to_fp32(out[i]), want) << "i " << i;
    }
    Status bad = c.reduce_scatter(std::span<const uint16_t>(in.data(), count),
                                  std::span<uint16_t>(out), DType::kBFloat16, ReduceOp::kSum);
    if (n > 1 && count != out.size() * n) {
      EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(bad.message().find("padded_numel"), std::string::npos) << bad.message();
    }
  });
}

TEST_P(Collectives, AllgatherConcatenatesChunksInRankOrder) {
  const int n = GetParam();
  run_ranks(n, [n](Communicator& c) {
    const int r = c.rank();
    for (size_t chunk : {size_t{0}, size_t{1}, size_t{7}, size_t{13}, size_t{1} << 18}) {
      std::vector<float> in(chunk), out(chunk * n, -1.0f);
      for (size_t i = 0; i < chunk; ++i) in[i] = static_cast<float>(r * 1000 + i % 1000);
      c.reset_counters();
      ASSERT_TRUE(c.allgather(std::span<const float>(in), std::span<float>(out)).ok());
      for (int q = 0; q < n; ++q)
        for (size_t i = 0; i < chunk; ++i)
          ASSERT_EQ(out[q * chunk + i], static_cast<float>(q * 1000 + i % 1000));
      OpCounters k = c.counters().op(OpType::kAllgather);
      EXPECT_EQ(k.bytes_sent, (n - 1) * chunk * 4);
      EXPECT_EQ(k.bytes_received, (n - 1) * chunk * 4);
      // In place (ZeRO-3 style: the shard already sits in the full buffer).
      std::vector<float> full(chunk * n, -1.0f);
      for (size_t i = 0; i < chunk; ++i) full[r * chunk + i] = in[i];
      std::span<const float> own(full.data() + r * chunk, chunk);
      ASSERT_TRUE(c.allgather(own, std::span<float>(full)).ok());
      EXPECT_EQ(full, out);
    }
  });
}

TEST_P(Collectives, BroadcastFromEveryRootAcrossSegments) {
  const int n = GetParam();
  run_ranks(n, [n](Communicator& c) {
    const int r = c.rank();
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, (size_t{3} << 18) + 5}) {
      for (int root = 0; root < n; ++root) {
        std::vector<float> v(count, -1.0f);
        if (r == root)
          for (size_t i = 0; i < count; ++i) v[i] = static_cast<float>(root * 7 + i % 11);
        c.reset_counters();
        ASSERT_TRUE(c.broadcast(std::span<float>(v), root).ok());
        for (size_t i = 0; i < count; ++i) ASSERT_EQ(v[i], static_cast<float>(root * 7 + i % 11));
        // Chain root -> root+1 -> ...: all but the last forward B bytes.
        int pos = (r - root + n) % n;
        uint64_t b = count * 4;
        OpCounters k = c.counters().op(OpType::kBroadcast);
        EXPECT_EQ(k.bytes_sent, n > 1 && pos < n - 1 ? b : 0u);
        EXPECT_EQ(k.bytes_received, n > 1 && pos > 0 ? b : 0u);
      }
    }
    EXPECT_EQ(c.broadcast(std::span<float>(), n).code(), StatusCode::kInvalidArgument);
  });
}

TEST_P(Collectives, BarrierWaitsForEveryRankAndSendsLog2NBytes) {
  const int n = GetParam();
  std::atomic<int> arrived{0};
  run_ranks(n, [n, &arrived](Communicator& c) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30 * c.rank()));
    arrived++;
    c.reset_counters();
    ASSERT_TRUE(c.barrier().ok());
    EXPECT_EQ(arrived.load(), n);
    uint64_t rounds = static_cast<uint64_t>(std::ceil(std::log2(n)));
    EXPECT_EQ(c.counters().op(OpType::kBarrier).bytes_sent, rounds);
    EXPECT_EQ(c.counters().op(OpType::kBarrier).bytes_received, rounds);
  });
}

TEST_P(Collectives, AsyncOpsMatchSyncResultsAndCompleteInOrder) {
  const int n = GetParam();
  run_ranks(n, [n](Communicator& c) {
    const int r = c.rank();
    const size_t count = 100003;
    std::vector<std::vector<float>> bufs(3, std::vector<float>(count));
    for (size_t b = 0; b < bufs.size(); ++b)
      for (size_t i = 0; i < count; ++i) bufs[b][i] = input_value(r, i + b);
    std::vector<float> sync_copy = bufs[0];
    std::vector<float> shard(count, static_cast<float>(r)), gathered(count * n);
    std::vector<WorkPtr> works;
    for (int b = 0; b < 3; ++b)
      works.push_back(c.allreduce_async(std::as_writable_bytes(std::span<float>(bufs[b])),
                                        DType::kFloat32, ReduceOp::kSum));
    works.push_back(c.allgather_async(std::as_bytes(std::span<const float>(shard)),
                                      std::as_writable_bytes(std::span<float>(gathered))));
    works.push_back(c.barrier_async());
    ASSERT_TRUE(works.back()->wait().ok());
    for (const WorkPtr& w : works) EXPECT_TRUE(w->is_completed());  // FIFO completion
    for (const WorkPtr& w : works) EXPECT_TRUE(w->wait(std::chrono::milliseconds(0)).ok());
    ASSERT_TRUE(c.allreduce(std::span<float>(sync_copy), ReduceOp::kSum).ok());
    EXPECT_EQ(sync_copy, bufs[0]);  // async and sync agree bit for bit
    for (size_t b = 0; b < bufs.size(); ++b)
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(bufs[b][i], sum_value(n, i + b));
    for (int q = 0; q < n; ++q) ASSERT_EQ(gathered[q * count + count - 1], static_cast<float>(q));
    EXPECT_EQ(c.counters().op(OpType::kAllreduce).calls, 4u);
  });
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, Collectives, ::testing::Values(1, 2, 3, 4),
                         [](const auto& info) {
                           std::string name = "N";
                           name += std::to_string(info.param);
                           return name;
                         });

}  // namespace
}  // namespace zerotrain::comm
