// Stage3Layout: how ZeRO stage 3 partitions the flat parameter buffer of
// Ψ elements over N ranks, per group (ParamLayout's groups: embeddings,
// blocks, ln_f), as pure arithmetic (no communication).
//
// A group's tensors are split in two classes, each a "compact list": the
// tensors' extents (a tensor's elements plus the alignment gap after it, so
// the two lists tile the group's span) concatenated in flat order.
//   gathered:   tensors with numel >= stage3_param_persistence_threshold;
//               all-gathered before each use and released after.
//   persistent: smaller tensors, kept whole on every rank (a copy of their
//               current weights) and refreshed by one all-gather of the
//               persistent list at each optimizer step.
// Each list of `count` elements is cut into N chunks of chunk =
// ceil(count / N); chunk r (compact [r·chunk, (r+1)·chunk), padding past
// count) belongs to rank r. So a group gather is ONE all-gather of N equal
// chunks, and "all chunks side by side" is simply the compact list
// followed by zero padding (pack_list / unpack_list).
//
// Rank r owns the real elements of its chunk of every list of every group:
// owned pieces, ordered by flat offset (groups ascending; within a group the
// gathered and persistent pieces merged by offset). The owned arrays
// (master weights, optimizer states, gradient and parameter partitions)
// hold exactly these elements in this order, so owned_ranges() is also the
// checkpoint's map from owned index to Ψ.
//
//   Stage3Layout plan(model.layout(), n, rank, /*persistence_threshold=*/100);
//   for (const GroupPlan& g : plan.groups())
//     for (const Piece& p : g.gathered.mine) stage[r * g.gathered.chunk + p.compact] = ...;
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "core/range.h"
#include "core/status.h"
#include "core/tensor.h"
#include "model/param_layout.h"

namespace zerotrain::zero {

// A run of elements this rank owns.
struct Piece {
  int64_t flat = 0;     // offset in Ψ
  int64_t count = 0;
  int64_t owned = 0;    // offset in the owned arrays
  int64_t compact = 0;  // offset inside this rank's chunk of its list
};

struct CompactList {
  std::vector<Range> extents;  // flat ranges (absolute), ascending
  int64_t count = 0;           // elements in the extents
  int64_t chunk = 0;           // ceil(count / N): one rank's share, padding included
  int world = 1;
  std::vector<Piece> mine;     // this rank's chunk, ascending
  int64_t padded() const { return chunk * world; }  // all chunks side by side
};

struct GroupPlan {
  int index = 0;
  int64_t offset = 0;  // the group's span in Ψ
  int64_t numel = 0;
  CompactList gathered, persistent;
  int64_t persistent_offset = 0;  // where its whole persistent copy starts (persistent store)
};

class Stage3Layout {
 public:
  Stage3Layout() = default;
  // Tensors with numel < persistence_threshold are persistent while the
  // persistent total stays <= model_persistence_limit (layout order).
  Stage3Layout(const model::ParamLayout& layout, int world, int rank,
               int64_t persistence_threshold,
               int64_t model_persistence_limit = std::numeric_limits<int64_t>::max());

  const std::vector<GroupPlan>& groups() const { return groups_; }
  const GroupPlan& group(int g) const { return groups_[static_cast<size_t>(g)]; }
  int world() const { return world_; }
  int rank() const { return rank_; }
  int64_t numel() const { return numel_; }               // Ψ
  int64_t owned_numel() const { return owned_numel_; }   // this rank's real elements
  int64_t persistent_numel() const { return persistent_numel_; }  // whole copies, every rank
  // Ascending flat ranges of the owned elements, adjacent ones merged; their
  // concatenation is the owned arrays' order.
  std::vector<Range> owned_ranges() const;

 private:
  std::vector<GroupPlan> groups_;
  int world_ = 1, rank_ = 0;
  int64_t numel_ = 0, owned_numel_ = 0, persistent_numel_ = 0;
};

// fn(flat, compact, count) for each extent, in compact order.
template <typename Fn>
void for_each_extent(const CompactList& l, Fn&& fn) {
  int64_t c = 0;
  for (const Range& e : l.extents) {
    fn(e.offset, c, e.count);
    c += e.count;
  }
}

// out[0, l.padded()) = the list's elements of `flat_group` (a group's fp32
// buffer whose element 0 is flat offset group_offset), then zeros; device
// or host memory (device copies).
Status pack_list(const CompactList& l, int64_t group_offset, ConstTensor flat_group, Tensor out);
// The inverse: the list's extents of flat_group from compact[0, l.count).
Status unpack_list(const CompactList& l, int64_t group_offset, ConstTensor compact,
                   Tensor flat_group);

}  // namespace zerotrain::zero
