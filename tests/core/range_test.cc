// Partition arithmetic swept over Ψ (1, odd, not divisible, large) and N in
// {1, 2, 3, 4, 8}: shards tile the padded buffer, rank ranges tile [0, Ψ),
// column buckets give every rank equal chunks and cover each shard once.
#include "core/range.h"

#include <gtest/gtest.h>

#include <vector>

namespace zerotrain {
namespace {

const std::vector<int64_t> kNumels = {0, 1, 2, 3, 7, 10, 97, 1000, 1001, 30'721, 10'000'019};
const std::vector<int> kWorlds = {1, 2, 3, 4, 8};

TEST(Partition, ShardsPadToAMultipleOfTheWorldSize) {
  EXPECT_EQ(shard_size(10, 4), 3);
  EXPECT_EQ(padded_numel(10, 4), 12);
  EXPECT_EQ(rank_range(10, 4, 3), (Range{9, 1}));
  EXPECT_EQ(rank_range(1, 4, 2), (Range{1, 0}));  // wholly padding
  for (int64_t psi : kNumels)
    for (int n : kWorlds) {
      const int64_t p = shard_size(psi, n);
      EXPECT_EQ(padded_numel(psi, n) % n, 0);
      EXPECT_GE(padded_numel(psi, n), psi);
      EXPECT_LT(padded_numel(psi, n) - psi, n) << "padding below one element per rank";
      int64_t next = 0;
      for (int r = 0; r < n; ++r) {
        const Range own = rank_range(psi, n, r);
        EXPECT_LE(own.count, p);
        if (own.count > 0) {
          EXPECT_EQ(own.offset, r * p) << "psi " << psi << " n " << n << " r " << r;
          EXPECT_EQ(own.offset, next);
        }
        next = own.end() > next ? own.end() : next;
      }
      EXPECT_EQ(next, psi) << "ranks tile [0, psi): psi " << psi << " n " << n;
    }
}

TEST(Partition, IntersectAndSplitByRank) {
  EXPECT_EQ(intersect({0, 10}, {5, 10}), (Range{5, 5}));
  EXPECT_EQ(intersect({0, 5}, {7, 3}).count, 0);
  for (int64_t psi : {int64_t{10}, int64_t{97}, int64_t{1001}})
    for (int n : kWorlds)
      for (int64_t b0 : {int64_t{0}, int64_t{3}, psi / 2})
        for (int64_t len : {int64_t{1}, int64_t{5}, psi - b0}) {
          const Range bucket = intersect({b0, len}, {0, psi});
          const std::vector<Range> parts = split_by_rank(bucket, psi, n);
          ASSERT_EQ(parts.size(), size_t(n));
          int64_t total = 0;
          for (int r = 0; r < n; ++r) {
            total += parts[r].count;
            const Range own = rank_range(psi, n, r);
            if (parts[r].count > 0) {
              EXPECT_GE(parts[r].offset, own.offset);
              EXPECT_LE(parts[r].end(), own.end());
            }
          }
          EXPECT_EQ(total, bucket.count) << "psi " << psi << " n " << n << " b0 " << b0;
        }
}

TEST(Partition, ColumnBucketsCoverEveryShardOnceInEqualChunks) {
  for (int64_t psi : kNumels) {
    if (psi > 100'000) continue;  // the element-by-element check below
    for (int n : kWorlds)
      for (int64_t bucket :
           {int64_t{1}, int64_t{5}, int64_t{64}, int64_t{1000}, int64_t{500'000'000}}) {
        const int64_t p = shard_size(psi, n);
        const int64_t s = bucket_shard(bucket, n, p);
        EXPECT_GE(s, 1);
        EXPECT_LE(s, p > 0 ? p : 1);
        if (p > 0 && bucket / n >= 1 && bucket / n <= p) {
          EXPECT_EQ(s, bucket / n);
        }
        const std::vector<Range> cols = bucket_columns(p, s);
        std::vector<int> seen(static_cast<size_t>(psi), 0);
        int64_t wire = 0, prev_end = 0;
        for (const Range& col : cols) {
          EXPECT_EQ(col.offset, prev_end);
          EXPECT_LE(col.count, s);
          prev_end = col.end();
          wire += (n - 1) * col.count;   // one reduce-scatter of n equal chunks
          for (int r = 0; r < n; ++r) {  // rank r's piece: its shard's column
            const Range piece = intersect({r * p + col.offset, col.count}, {0, psi});
            for (int64_t i = piece.offset; i < piece.end(); ++i) ++seen[i];
          }
        }
        EXPECT_EQ(prev_end, p);
        EXPECT_EQ(wire, (n - 1) * p) << "no padding beyond the shard's own";
        for (int64_t i = 0; i < psi; ++i)
          ASSERT_EQ(seen[i], 1) << "element " << i << " psi " << psi << " n " << n;
      }
  }
}

TEST(Partition, ContiguousBuckets) {
  const std::vector<Range> b = contiguous_buckets({0, 10}, 4);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[2], (Range{8, 2}));
  EXPECT_TRUE(contiguous_buckets({5, 0}, 4).empty());
}

}  // namespace
}  // namespace zerotrain
