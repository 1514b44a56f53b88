// ShardLayout: which elements of the flat buffer of Ψ elements each of N
// ranks owns at ZeRO stages 1-2, as pure arithmetic.
//
// Ψ is cut into contiguous ownership buckets of N·S elements (S =
// bucket_shard(owner_bucket, N, P), P = ceil(Ψ/N)); the last bucket holds
// the remaining L elements. Bucket k is N equal chunks (S, or ceil(L/N) for
// the last, padded past L) and rank r owns chunk r of every bucket. With
// one bucket (owner_bucket >= N·P) this is the classic contiguous shard
// [r·P, (r+1)·P).
//
// Why buckets: backward finalizes gradients from the end of the buffer, so
// a contiguous bucket is complete as soon as backward has passed it and
// its reduce-scatter can run while backward continues. With one big
// shard per rank, a reduce-scatter needs rank 0's piece — the embeddings,
// final last — before anything can go.
//
// Every rank's owned arrays (master, optimizer states, gradient partition)
// are indexed by "slots": bucket k's chunk is slots [k·S, k·S + chunk_k),
// Q = P slots in all on every rank. Only the last bucket's chunks can be
// short, so a rank's real elements are the slot prefix [0, owned_count),
// and slot j means the same position of the same bucket on every rank: an
// all-gather of slot range [a, b) from every rank is one collective of N
// equal chunks, as is a reduce-scatter of one bucket's chunk range.
//
//   ShardLayout l(psi, n, /*owner_bucket=*/reduce_bucket_size);
//   for (Range col : l.reduce_columns(width))          // top-down when reducing
//     for (int r = 0; r < n; ++r)
//       for (const SlotRun& run : l.runs(r, col)) chunk_r[run.slot - col.offset] = g[run.flat...];
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <vector>

#include "core/range.h"

namespace zerotrain::zero {

// A run of real elements: flat [flat, flat + count) of Ψ is slots
// [slot, slot + count) of its owner's arrays.
struct SlotRun {
  int64_t flat = 0;
  int64_t slot = 0;
  int64_t count = 0;
  bool operator==(const SlotRun&) const = default;
};

class ShardLayout {
 public:
  ShardLayout() = default;
  // owner_bucket >= 1 elements per ownership bucket (all ranks' chunks).
  ShardLayout(int64_t numel, int world, int64_t owner_bucket);

  int64_t numel() const { return numel_; }
  int world() const { return world_; }
  int64_t slots() const { return slots_; }  // Q = ceil(Ψ/N), padding included
  int64_t bucket_count() const { return buckets_; }
  int64_t bucket_shard() const { return shard_; }  // S: slots of every bucket but the last
  // The real elements rank owns: the slot prefix [0, owned_count).
  int64_t owned_count(int rank) const;
  // Rank's real elements among slots `cols`, ascending (one run per bucket).
  std::vector<SlotRun> runs(int rank, Range cols) const;
  // Flat ranges of everything rank owns, ascending, adjacent ones merged:
  // their concatenation is the owned arrays' order (the checkpoint's map).
  std::vector<Range> owned_ranges(int rank) const;
  // Slot ranges of at most `width` slots covering [0, Q), split at bucket
  // boundaries so each is one bucket's contiguous stretch (a reduce-scatter
  // of it reads N contiguous flat pieces).
  std::vector<Range> reduce_columns(int64_t width) const;
  // The lowest flat element slot range `cols` reads on any rank (rank 0's
  // first): its gradients are final once backward's final suffix of the
  // buffer begins at or below it.
  int64_t column_floor(Range cols) const;

 private:
  Range bucket(int64_t k) const;  // flat
  int64_t chunk(int64_t k) const;

  int64_t numel_ = 0, slots_ = 0, shard_ = 1, buckets_ = 0;
  int world_ = 1;
};

}  // namespace zerotrain::zero
