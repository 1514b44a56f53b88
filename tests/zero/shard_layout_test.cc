// ShardLayout (stages 1-2 ownership) swept over Ψ (0, 1, odd, not
// divisible, large), N in {1, 2, 3, 4, 8} and ownership buckets from one
// element to the whole buffer: every element has exactly one owner, a
// rank's real elements are a slot prefix, slot j is the same position on
// every rank, reduce columns stay inside one bucket and move exactly the
// padded (N−1)·P elements, and a column is final once backward has passed
// its bucket.
#include "zero/shard_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace zerotrain::zero {
namespace {

const std::vector<int64_t> kNumels = {0, 1, 2, 3, 7, 10, 97, 1000, 1001, 30'721};
const std::vector<int> kWorlds = {1, 2, 3, 4, 8};
const std::vector<int64_t> kBuckets = {1, 5, 64, 1000, 500'000'000};

std::string where(int64_t psi, int n, int64_t bucket) {
  return "psi " + std::to_string(psi) + " n " + std::to_string(n) + " bucket " +
         std::to_string(bucket);
}

TEST(ShardLayout, EveryElementHasOneOwnerAndRealSlotsArePrefixes) {
  for (int64_t psi : kNumels)
    for (int n : kWorlds)
      for (int64_t bucket : kBuckets) {
        const ShardLayout l(psi, n, bucket);
        const std::string at = where(psi, n, bucket);
        EXPECT_EQ(l.slots(), shard_size(psi, n)) << at;
        std::vector<int> seen(static_cast<size_t>(psi), 0);
        int64_t total = 0;
        for (int r = 0; r < n; ++r) {
          const int64_t own = l.owned_count(r);
          EXPECT_LE(own, l.slots()) << at;
          total += own;
          int64_t next_slot = 0, last_flat = -1;
          for (const SlotRun& run : l.runs(r, {0, l.slots()})) {
            EXPECT_EQ(run.slot, next_slot) << at << ": real slots are a prefix";
            EXPECT_GT(run.flat, last_flat) << at << ": runs ascend in flat order too";
            next_slot = run.slot + run.count;
            last_flat = run.flat + run.count - 1;
            for (int64_t i = run.flat; i < run.flat + run.count; ++i) ++seen[i];
          }
          EXPECT_EQ(next_slot, own) << at;
          int64_t merged = 0;
          for (const Range& g : l.owned_ranges(r)) merged += g.count;
          EXPECT_EQ(merged, own) << at;
        }
        EXPECT_EQ(total, psi) << at;
        for (int64_t i = 0; i < psi; ++i) ASSERT_EQ(seen[i], 1) << at << " element " << i;
      }
}

// One bucket as large as the buffer is the classic contiguous shard.
TEST(ShardLayout, OneBucketIsTheContiguousShard) {
  for (int64_t psi : kNumels)
    for (int n : kWorlds) {
      const ShardLayout l(psi, n, 500'000'000);
      for (int r = 0; r < n; ++r) {
        const Range want = rank_range(psi, n, r);
        const std::vector<Range> got = l.owned_ranges(r);
        if (want.count == 0) {
          EXPECT_TRUE(got.empty()) << where(psi, n, 0);
        } else {
          ASSERT_EQ(got.size(), 1u) << where(psi, n, 0);
          EXPECT_EQ(got[0], want) << where(psi, n, 0);
        }
      }
    }
}

// Reduce columns: consecutive, at most `width`, each one bucket's stretch
// (every rank's elements in it one contiguous run, all within one span of
// N·S elements), (N−1)·P elements on the wire in all; their floors ascend,
// so flushing them top-down as backward finalizes the buffer's suffix is
// in order, and the top column waits for one bucket of backward only.
TEST(ShardLayout, ReduceColumnsStayInOneBucketAndAscend) {
  for (int64_t psi : kNumels)
    for (int n : kWorlds)
      for (int64_t bucket : kBuckets)
        for (int64_t width : {int64_t{1}, int64_t{3}, bucket / n + 1}) {
          const ShardLayout l(psi, n, bucket);
          const std::string at = where(psi, n, bucket) + " width " + std::to_string(width);
          const int64_t span = l.bucket_shard() * n;
          int64_t next = 0, wire = 0, floor = -1;
          for (const Range& col : l.reduce_columns(width)) {
            EXPECT_EQ(col.offset, next) << at;
            EXPECT_LE(col.count, width) << at;
            next = col.end();
            wire += (n - 1) * col.count;
            const int64_t f = l.column_floor(col);
            EXPECT_GE(f, floor) << at;
            floor = f;
            for (int r = 0; r < n; ++r) {
              const std::vector<SlotRun> runs = l.runs(r, col);
              ASSERT_LE(runs.size(), 1u) << at;
              if (runs.empty()) continue;
              EXPECT_EQ(runs[0].slot, col.offset) << at << ": real elements start the chunk";
              EXPECT_GE(runs[0].flat, f) << at;
              EXPECT_LE(runs[0].flat + runs[0].count, f / span * span + span) << at;
            }
          }
          EXPECT_EQ(next, l.slots()) << at;
          EXPECT_EQ(wire, (n - 1) * shard_size(psi, n)) << at << ": no padding beyond P";
          if (psi > 0 && n > 1 && bucket < psi) {
            EXPECT_GE(floor, psi - span) << at << ": the top column is the top bucket's";
          }
        }
}

// Slot j is the same position of the same bucket on every rank: the flat
// offset of rank r's slot j is rank 0's plus r times that bucket's chunk.
TEST(ShardLayout, SlotsLineUpAcrossRanks) {
  for (int64_t psi : {int64_t{97}, int64_t{1001}, int64_t{30'721}})
    for (int n : {2, 3, 8})
      for (int64_t bucket : {int64_t{64}, int64_t{1000}}) {
        const ShardLayout l(psi, n, bucket);
        for (int64_t j = 0; j < l.slots(); ++j) {
          const std::vector<SlotRun> first = l.runs(0, {j, 1});
          ASSERT_EQ(first.size(), 1u);
          for (int r = 1; r < n; ++r) {
            const std::vector<SlotRun> mine = l.runs(r, {j, 1});
            if (mine.empty()) continue;  // padding of the last bucket
            const int64_t chunk = (mine[0].flat - first[0].flat) / r;
            EXPECT_EQ(mine[0].flat - first[0].flat, r * chunk) << where(psi, n, bucket);
            EXPECT_LE(chunk, l.bucket_shard());
          }
        }
      }
}

TEST(ShardLayout, LargeBufferNotDivisibleByTheWorld) {
  const int64_t psi = 10'000'019;  // prime
  for (int n : kWorlds) {
    const ShardLayout l(psi, n, 1'000'000);
    int64_t real = 0;
    for (int r = 0; r < n; ++r) real += l.owned_count(r);
    EXPECT_EQ(real, psi);
    EXPECT_EQ(l.slots(), shard_size(psi, n));
    const int64_t span = 1'000'000 / n * n;  // N·S
    EXPECT_EQ(l.bucket_count(), (psi + span - 1) / span);
  }
}

}  // namespace
}  // namespace zerotrain::zero
