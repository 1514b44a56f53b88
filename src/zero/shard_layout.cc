// Stages 1-2 ownership arithmetic (see shard_layout.h).
#include "zero/shard_layout.h"

#include <algorithm>

#include "core/status.h"

namespace zerotrain::zero {

ShardLayout::ShardLayout(int64_t numel, int world, int64_t owner_bucket)
    : numel_(numel), world_(world) {
  ZT_CHECK(world >= 1 && numel >= 0 && owner_bucket >= 1, "ShardLayout: numel ", numel,
           " world ", world, " bucket ", owner_bucket);
  slots_ = shard_size(numel, world);
  shard_ = zerotrain::bucket_shard(owner_bucket, world, slots_);
  const int64_t span = shard_ * world;
  buckets_ = (numel + span - 1) / span;
}

Range ShardLayout::bucket(int64_t k) const {
  const int64_t span = shard_ * world_;
  return {k * span, std::min(span, numel_ - k * span)};
}

int64_t ShardLayout::chunk(int64_t k) const {
  return k + 1 < buckets_ ? shard_ : shard_size(bucket(k).count, world_);
}

int64_t ShardLayout::owned_count(int rank) const {
  if (buckets_ == 0) return 0;
  const int64_t last = buckets_ - 1;
  const int64_t c = chunk(last);
  return last * shard_ + std::clamp<int64_t>(bucket(last).count - rank * c, 0, c);
}

std::vector<SlotRun> ShardLayout::runs(int rank, Range cols) const {
  std::vector<SlotRun> out;
  cols = intersect(cols, {0, slots_});
  if (cols.count <= 0) return out;
  const int64_t first = cols.offset / shard_;
  const int64_t last = std::min((cols.end() - 1) / shard_, buckets_ - 1);
  for (int64_t k = first; k <= last; ++k) {
    const Range b = bucket(k);
    const int64_t c = chunk(k);
    const int64_t real = std::clamp<int64_t>(b.count - rank * c, 0, c);
    const Range slots = intersect(cols, {k * shard_, real});
    if (slots.count <= 0) continue;
    out.push_back({b.offset + rank * c + (slots.offset - k * shard_), slots.offset, slots.count});
  }
  return out;
}

std::vector<Range> ShardLayout::owned_ranges(int rank) const {
  std::vector<Range> out;
  for (const SlotRun& run : runs(rank, {0, slots_})) {
    if (!out.empty() && out.back().end() == run.flat)
      out.back().count += run.count;
    else
      out.push_back({run.flat, run.count});
  }
  return out;
}

std::vector<Range> ShardLayout::reduce_columns(int64_t width) const {
  ZT_CHECK(width >= 1, "ShardLayout::reduce_columns: width ", width);
  std::vector<Range> out;
  for (int64_t k = 0; k < buckets_; ++k)
    for (const Range& r : contiguous_buckets({k * shard_, chunk(k)}, width)) out.push_back(r);
  return out;
}

int64_t ShardLayout::column_floor(Range cols) const {
  const std::vector<SlotRun> r = runs(0, cols);
  // Rank 0 always holds real elements of a column unless it lies wholly in
  // the last bucket's padding, which no rank then holds: nothing to wait for.
  return r.empty() ? numel_ : r.front().flat;
}

}  // namespace zerotrain::zero
