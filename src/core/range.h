// ZeRO partition arithmetic as pure functions. A flat buffer of Ψ = numel
// elements is padded to N·P (P = ceil(Ψ / N), the shard size); rank r owns
// flat [r·P, (r+1)·P), of which only the part below Ψ is real.
//
// Buckets are "columns": bucket c is the same shard-relative range
// [c.offset, c.offset + c.count) taken from EVERY rank's shard, so one
// bucket is N equal chunks and a reduce-scatter (or all-gather) of it moves
// exactly (N−1)·c.count elements per rank, with no per-bucket padding. A
// bucket of B elements in total has S = clamp(B / N, 1, P) elements per
// shard. (Stage 3 cuts each group's chunk so; stages 1-2 own chunks of
// contiguous buckets instead, shard_layout.h.)
//
//   Range own = rank_range(numel, n, rank);                  // real elements
//   for (Range col : bucket_columns(shard_size(numel, n), bucket_shard(B, n, P))) ...
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

namespace zerotrain {

struct Range {
  int64_t offset = 0;
  int64_t count = 0;
  int64_t end() const { return offset + count; }
  bool operator==(const Range&) const = default;
};

// ceil(numel / world): every shard's length, padding included (0 for numel 0).
int64_t shard_size(int64_t numel, int world);
// numel rounded up to a multiple of world.
int64_t padded_numel(int64_t numel, int world);
// The real elements rank owns: [r·P, (r+1)·P) ∩ [0, numel); count 0 (offset
// numel) for a shard that lies wholly in the padding.
Range rank_range(int64_t numel, int world, int rank);
// a ∩ b; count 0 (offset max of the starts, clamped) when disjoint.
Range intersect(Range a, Range b);
// The part of flat range `bucket` that each rank owns: world entries.
std::vector<Range> split_by_rank(Range bucket, int64_t numel, int world);

// Elements per shard of a column bucket of bucket_size elements in total.
int64_t bucket_shard(int64_t bucket_size, int world, int64_t shard);
// [0, shard) cut into consecutive ranges of `per_shard` (the last shorter).
std::vector<Range> bucket_columns(int64_t shard, int64_t per_shard);
// [0, numel) cut into consecutive ranges of `bucket` elements (all-reduce
// and broadcast buckets).
std::vector<Range> contiguous_buckets(Range whole, int64_t bucket);

}  // namespace zerotrain
