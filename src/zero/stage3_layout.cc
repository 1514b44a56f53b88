// Stage3Layout: per-group compact lists and this rank's owned pieces (see
// stage3_layout.h).
#include "zero/stage3_layout.h"

#include <algorithm>

#include "device/device.h"
#include "zero/memory_ops.h"

namespace zerotrain::zero {
namespace {

// The pieces of compact range [begin, end) of list l, in flat order, with
// compact offsets relative to `begin`.
std::vector<Piece> pieces_of(const CompactList& l, int64_t begin, int64_t end) {
  std::vector<Piece> out;
  for_each_extent(l, [&](int64_t flat, int64_t c, int64_t n) {
    const int64_t lo = std::max(begin, c), hi = std::min(end, c + n);
    if (lo < hi) out.push_back({.flat = flat + (lo - c), .count = hi - lo, .compact = lo - begin});
  });
  return out;
}

void finish_list(CompactList* l, int world, int rank) {
  l->world = world;
  l->chunk = shard_size(l->count, world);
  const int64_t begin = std::min(l->count, rank * l->chunk);
  const int64_t end = std::min(l->count, begin + l->chunk);
  l->mine = pieces_of(*l, begin, end);
}

void append_extent(CompactList* l, Range r) {
  if (!l->extents.empty() && l->extents.back().end() == r.offset)
    l->extents.back().count += r.count;
  else
    l->extents.push_back(r);
  l->count += r.count;
}

}  // namespace

Stage3Layout::Stage3Layout(const model::ParamLayout& layout, int world, int rank,
                           int64_t persistence_threshold, int64_t model_persistence_limit)
    : world_(world), rank_(rank), numel_(layout.total_numel()) {
  int64_t persistent_total = 0;
  const auto& tensors = layout.tensors();
  for (const model::GroupInfo& gi : layout.groups()) {
    GroupPlan g;
    g.index = gi.index;
    g.offset = gi.offset;
    g.numel = gi.numel;
    const int64_t group_end = gi.offset + gi.numel;
    for (int t = gi.first_tensor; t < gi.first_tensor + gi.tensor_count; ++t) {
      const model::TensorInfo& ti = tensors[static_cast<size_t>(t)];
      // The extent runs to the next tensor (its alignment gap included).
      const bool last = t + 1 == gi.first_tensor + gi.tensor_count;
      const int64_t end = last ? group_end : tensors[static_cast<size_t>(t) + 1].offset;
      const int64_t begin = t == gi.first_tensor ? gi.offset : ti.offset;
      const bool persist = ti.numel < persistence_threshold &&
                           end - begin <= model_persistence_limit - persistent_total;
      if (persist) persistent_total += end - begin;
      append_extent(persist ? &g.persistent : &g.gathered, {begin, end - begin});
    }
    finish_list(&g.gathered, world, rank);
    finish_list(&g.persistent, world, rank);
    g.persistent_offset = persistent_numel_;
    persistent_numel_ += g.persistent.count;
    // Owned order: both lists' pieces merged by flat offset.
    std::vector<Piece*> all;
    for (Piece& p : g.gathered.mine) all.push_back(&p);
    for (Piece& p : g.persistent.mine) all.push_back(&p);
    std::sort(all.begin(), all.end(), [](const Piece* a, const Piece* b) { return a->flat < b->flat; });
    for (Piece* p : all) {
      p->owned = owned_numel_;
      owned_numel_ += p->count;
    }
    groups_.push_back(std::move(g));
  }
}

std::vector<Range> Stage3Layout::owned_ranges() const {
  std::vector<Range> pieces;
  for (const GroupPlan& g : groups_) {
    for (const CompactList* l : {&g.gathered, &g.persistent})
      for (const Piece& p : l->mine) pieces.push_back({p.flat, p.count});
  }
  std::sort(pieces.begin(), pieces.end(),
            [](const Range& a, const Range& b) { return a.offset < b.offset; });
  std::vector<Range> out;
  for (const Range& r : pieces) {
    if (!out.empty() && out.back().end() == r.offset)
      out.back().count += r.count;
    else
      out.push_back(r);
  }
  return out;
}

Status pack_list(const CompactList& l, int64_t group_offset, ConstTensor flat_group, Tensor out) {
  Status st;
  for_each_extent(l, [&](int64_t flat, int64_t c, int64_t n) {
    if (st.ok())
      st = device::copy(flat_group.slice(static_cast<size_t>(flat - group_offset), n),
                        out.slice(static_cast<size_t>(c), n));
  });
  ZT_RETURN_IF_ERROR(st);
  return fill_zero(
      out.slice(static_cast<size_t>(l.count), static_cast<size_t>(l.padded() - l.count)));
}

Status unpack_list(const CompactList& l, int64_t group_offset, ConstTensor compact,
                   Tensor flat_group) {
  Status st;
  for_each_extent(l, [&](int64_t flat, int64_t c, int64_t n) {
    if (st.ok())
      st = device::copy(compact.slice(static_cast<size_t>(c), n),
                        flat_group.slice(static_cast<size_t>(flat - group_offset), n));
  });
  return st;
}

}  // namespace zerotrain::zero
