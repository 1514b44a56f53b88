// ZeRO stages 1-2: publishing the new weights — the compute copy rounded
// from the owned master and all-gathered column by column (see
// sharded_strategy.h).
#include <algorithm>
#include <string>

#include "device/ops.h"
#include "zero/memory_ops.h"
#include "zero/sharded_strategy.h"

namespace zerotrain::zero {

Status ShardedStrategy::publish_parameters() {
  ZT_RETURN_IF_ERROR(finish_gathers());                  // a forward-less step: the last ones first
  if (half()) ZT_RETURN_IF_ERROR(half_->release_all());  // expansions of the old weights
  if (world() == 1) {
    if (half()) return half_->parameters().write(0, master_);
    if (master_.data != params_.data) return convert_to(master_, params_);
    return Status();
  }
  return options_.allgather_partitions ? gather_columns() : broadcast_shards();
}

Tensor ShardedStrategy::compute_slice(int64_t flat, int64_t count) const {
  if (half())
    return half_->parameters().slice(static_cast<size_t>(flat), static_cast<size_t>(count));
  return params_.slice(static_cast<size_t>(flat), static_cast<size_t>(count));
}

// Column by column (slot ranges): own slots, rounded to the model dtype
// and in its width (2 bytes for bf16/fp16, DeepSpeed's 16-bit all-gather),
// into chunk `rank` of a staging slot, all-gather in place, then every
// chunk's real elements into the compute copy. With two slots the next
// column is rounded while one is gathered.
Status ShardedStrategy::launch_gather() {
  const int n = world();
  const Range col = gather_cols_[gather_next_];
  const DType wire = half() ? half_->parameters().dtype() : DType::kFloat32;
  const auto cc = static_cast<size_t>(col.count);
  ZT_ASSIGN_OR_RETURN(Tensor slot, pipe_.next_slot());
  // next_slot() completed the column that used this slot last.
  gather_done_ =
      std::max(gather_done_, gather_next_ + 1 - std::min<size_t>(gather_next_ + 1, pipe_.slots()));
  const Tensor all(slot.data, wire, n * cc, slot.device);
  const Tensor mine = all.slice(rank() * cc, cc);
  const Range own = intersect(col, {0, own_count_});
  const auto oc = static_cast<size_t>(std::max<int64_t>(own.count, 0));
  if (oc > 0) ZT_RETURN_IF_ERROR(convert_to(master_.slice(own.offset, oc), mine.slice(0, oc)));
  ZT_RETURN_IF_ERROR(fill_zero(mine.slice(oc, cc - oc)));
  comm::WorkPtr w = comm_->allgather_async(mine, all);
  ++gather_next_;
  return pipe_.submit(std::move(w), [this, n, col, all, cc] {
    for (int r = 0; r < n; ++r)
      for (const SlotRun& run : layout_.runs(r, col))  // already rounded: exact
        ZT_RETURN_IF_ERROR(device::copy(
            all.slice(static_cast<size_t>(r) * cc + (run.slot - col.offset), run.count),
            compute_slice(run.flat, run.count)));
    return Status();
  });
}

Status ShardedStrategy::gather_columns() {
  gather_next_ = gather_done_ = 0;
  gathers_pending_ = true;
  if (!gather_in_forward_) return finish_gathers();  // all of them now
  // As many columns as there are slots — a fixed number, so collectives
  // the caller issues before the next forward (a loss all-reduce) come
  // after the same gathers on every rank; the rest under the forward,
  // which issues no other collective.
  while (gather_next_ < std::min<size_t>(gather_cols_.size(), pipe_.slots()))
    ZT_RETURN_IF_ERROR(launch_gather());
  return Status();
}

Status ShardedStrategy::pump_gathers() {
  while (gathers_pending_ && gather_next_ < gather_cols_.size() && pipe_.next_slot_ready())
    ZT_RETURN_IF_ERROR(launch_gather());
  return Status();
}

Status ShardedStrategy::await_gathers(int64_t flat_end) {
  if (!gathers_pending_) return Status();
  while (gather_done_ < gather_cols_.size() && gather_floor_[gather_done_] < flat_end) {
    const size_t before = gather_done_;
    if (gather_next_ < gather_cols_.size()) {
      ZT_RETURN_IF_ERROR(launch_gather());
    } else {
      ZT_RETURN_IF_ERROR(pipe_.drain());
      gather_done_ = gather_next_;
    }
    forward_gathered_ += static_cast<int64_t>(gather_done_ - before);
  }
  if (gather_done_ == gather_cols_.size()) gathers_pending_ = false;
  return pump_gathers();
}

Status ShardedStrategy::finish_gathers() {
  if (!gathers_pending_) return Status();
  gathers_pending_ = false;  // an error leaves the weights unknown: it is returned
  while (gather_next_ < gather_cols_.size()) ZT_RETURN_IF_ERROR(launch_gather());
  ZT_RETURN_IF_ERROR(pipe_.drain());
  gather_done_ = gather_next_;
  return Status();
}

// DeepSpeed's allgather_partitions = false: each owner broadcasts its
// ranges of the compute copy, in allgather_bucket_size pieces.
Status ShardedStrategy::broadcast_shards() {
  for (const SlotRun& run : own_runs_) {
    const Tensor m = master_.slice(static_cast<size_t>(run.slot), run.count);
    if (half()) {
      ZT_RETURN_IF_ERROR(half_->parameters().write(static_cast<size_t>(run.flat), m));
    } else {
      const Tensor p = params_.slice(static_cast<size_t>(run.flat), run.count);
      if (m.data != p.data) ZT_RETURN_IF_ERROR(convert_to(m, p));
    }
  }
  for (int r = 0; r < world(); ++r)
    for (const Range& owned : layout_.owned_ranges(r))
      for (const Range& b : contiguous_buckets(owned, options_.allgather_bucket_size))
        ZT_RETURN_IF_ERROR(comm_->broadcast(compute_slice(b.offset, b.count), r));
  return Status();
}

Status ShardedStrategy::gather_full_parameters(std::span<float> out) {
  if (out.size() != static_cast<size_t>(numel_))
    return invalid_argument("gather_full_parameters: needs " + std::to_string(numel_) +
                            " floats, got " + std::to_string(out.size()));
  ZT_RETURN_IF_ERROR(finish_gathers());
  if (half()) return half_->parameters().read(0, Tensor(out));
  return device::copy_to_host(params_, out.data());
}

}  // namespace zerotrain::zero
