// ZeRO partition arithmetic (see range.h).
#include "core/range.h"

#include <algorithm>

#include "core/status.h"

namespace zerotrain {

int64_t shard_size(int64_t numel, int world) {
  ZT_CHECK(world >= 1 && numel >= 0, "shard_size: numel ", numel, " world ", world);
  return (numel + world - 1) / world;
}

int64_t padded_numel(int64_t numel, int world) { return shard_size(numel, world) * world; }

Range intersect(Range a, Range b) {
  const int64_t begin = std::max(a.offset, b.offset);
  const int64_t end = std::min(a.end(), b.end());
  if (end <= begin) return {std::min(begin, std::max(a.end(), b.end())), 0};
  return {begin, end - begin};
}

Range rank_range(int64_t numel, int world, int rank) {
  const int64_t p = shard_size(numel, world);
  Range r = intersect({rank * p, p}, {0, numel});
  if (r.count == 0) r.offset = numel;
  return r;
}

std::vector<Range> split_by_rank(Range bucket, int64_t numel, int world) {
  std::vector<Range> out;
  out.reserve(world);
  for (int r = 0; r < world; ++r) out.push_back(intersect(bucket, rank_range(numel, world, r)));
  return out;
}

int64_t bucket_shard(int64_t bucket_size, int world, int64_t shard) {
  return std::clamp<int64_t>(bucket_size / world, 1, std::max<int64_t>(shard, 1));
}

std::vector<Range> bucket_columns(int64_t shard, int64_t per_shard) {
  return contiguous_buckets({0, shard}, per_shard);
}

std::vector<Range> contiguous_buckets(Range whole, int64_t bucket) {
  ZT_CHECK(bucket >= 1, "contiguous_buckets: bucket ", bucket);
  std::vector<Range> out;
  for (int64_t b = whole.offset; b < whole.end(); b += bucket)
    out.push_back({b, std::min(bucket, whole.end() - b)});
  return out;
}

}  // namespace zerotrain
