// ZeRO stages 1-2, shared: the gradient reduction into the owned
// partition, bucket by bucket, and the hooks that launch it from the
// backward (see sharded_strategy.h).
#include <algorithm>
#include <utility>

#include "device/ops.h"
#include "zero/memory_ops.h"
#include "zero/sharded_strategy.h"

namespace zerotrain::zero {

ShardedStrategy::~ShardedStrategy() {
  if (hooks_installed_) model_->set_hooks({});
  // 16-bit stage 2 bound its own backward buffer, about to be freed.
  if (!stage2_grads_.empty()) model_->set_gradients(nullptr);
}

void ShardedStrategy::install_hooks() {
  // The final region grows as a suffix only if the groups tile [0, Ψ).
  const auto& groups = model_->layout().groups();
  int64_t end = 0;
  bool tiled = true;
  for (const auto& g : groups) {
    tiled = tiled && g.offset == end;
    end = g.offset + g.numel;
  }
  tiled = tiled && end == numel_;
  const bool reduce_hook = tiled && options_.reduce_scatter;
  // Stage g reads groups <= g (the head also group 0): in flat order, so
  // the columns below group g's end are the ones it waits for.
  gather_in_forward_ = tiled && options_.overlap_comm && options_.allgather_partitions &&
                       world() > 1 && pipe_.slots() > 1;
  if (!reduce_hook && !half() && !gather_in_forward_) return;
  model::GroupHooks h;
  h.before_forward = [this](int g) {
    const auto& grp = model_->layout().groups()[static_cast<size_t>(g)];
    ZT_RETURN_IF_ERROR(await_gathers(grp.offset + grp.numel));
    return half() ? half_->before_forward(g) : Status();
  };
  h.after_forward = [this](int g) {
    if (half()) ZT_RETURN_IF_ERROR(half_->after_forward(g));
    if (g == model_->num_groups() - 1) return finish_gathers();
    return pump_gathers();
  };
  if (half()) h.before_backward = [this](int g) { return half_->before_backward(g); };
  // 16-bit stage 1: group g's gradients reach the accumulator first.
  h.after_backward = [this, reduce_hook](int g) {
    if (half()) ZT_RETURN_IF_ERROR(half_->after_backward(g));
    return reduce_hook ? on_group_final(g) : Status();
  };
  model_->set_hooks(std::move(h));
  hooks_installed_ = true;
}

Status ShardedStrategy::on_group_final(int group) {
  if (!reducing_pass_) return Status();  // stage 1 before the boundary: accumulate only
  if (group != next_final_group_) {
    next_final_group_ = -2;  // out of the expected order: flush at the end
    return Status();
  }
  next_final_group_ = group - 1;
  const int64_t final_begin = model_->layout().groups()[group].offset;
  while (pending_cols_ > 0 && reduce_floor_[pending_cols_ - 1] >= final_begin) {
    ZT_RETURN_IF_ERROR(reduce_column(pending_cols_ - 1));
    --pending_cols_;
    ++hook_flushed_;
  }
  return Status();
}

Status ShardedStrategy::reduce_pending_columns() {
  for (; pending_cols_ > 0; --pending_cols_) ZT_RETURN_IF_ERROR(reduce_column(pending_cols_ - 1));
  return pipe_.drain();
}

Status ShardedStrategy::read_gradients(Range src, Tensor out) const {
  if (src.count <= 0) return Status();
  if (grads_.empty())  // 16-bit stage 1
    return half_->gradients().read(static_cast<size_t>(src.offset), out);
  return device::copy(grads_.slice(static_cast<size_t>(src.offset), src.count), out);
}

Status ShardedStrategy::reduce_column(size_t c) {
  const Range col = reduce_cols_[c];
  ZT_RETURN_IF_ERROR(finish_gathers());  // the staging slots are shared
  const int n = world();
  if (n == 1) {  // one rank owns [0, Ψ): slots are flat
    const Range own = intersect(col, {0, own_count_});
    if (!separate_grads_ || own.count == 0) return Status();
    if (grads_.empty()) {  // 16-bit stage 1: straight into the fp32 own gradients
      if (options_.optimizer_reads_16bit_gradients && !options_.offload_optimizer) {
        // ... or none: the optimizer reads the [Ψ] accumulator as it is.
        owned_grads_ = half_->gradients().tensor().slice(0, static_cast<size_t>(own_count_));
        return Status();
      }
      ZT_RETURN_IF_ERROR(ensure_step_gradients());
      return read_gradients(own, owned_grads_.slice(static_cast<size_t>(own.offset), own.count));
    }
    return take_reduced(col, grads_.slice(static_cast<size_t>(own.offset), own.count));
  }
  const ReductionPolicy r = reduction_policy(options_, n);
  const auto cc = static_cast<size_t>(col.count);
  // The slot also orders this collective after the one that used it last.
  ZT_ASSIGN_OR_RETURN(Tensor slot, pipe_.next_slot());
  const int64_t base = reduce_base_[c];
  Tensor all;
  if (base >= 0) {
    all = Tensor(grads_.data, DType::kFloat32, static_cast<size_t>(grads_capacity_), grads_.device)
              .slice(static_cast<size_t>(base), n * cc);
  } else {
    all = slot.slice(0, n * cc);
    for (int k = 0; k < n; ++k) {
      // One run at most (a reduce column stays in one bucket), at the
      // chunk's start: a rank's real elements are a slot prefix.
      const Tensor chunk = all.slice(k * cc, cc);
      int64_t filled = 0;
      for (const SlotRun& run : layout_.runs(k, col)) {
        ZT_RETURN_IF_ERROR(
            read_gradients({run.flat, run.count},
                           chunk.slice(static_cast<size_t>(run.slot - col.offset), run.count)));
        filled = run.slot - col.offset + run.count;
      }
      ZT_RETURN_IF_ERROR(fill_zero(chunk.slice(static_cast<size_t>(filled), cc - filled)));
    }
  }
  const Tensor mine = all.slice(rank() * cc, cc);
  const device::Ops& ops = device().ops();
  const DType wire = options_.grad_wire;
  if (wire != DType::kFloat32) {
    // 16 bits: narrowed in place, reduced there, mine widened back in place.
    ZT_RETURN_IF_ERROR(ops.narrow_in_place(all, r.pre, wire));
    const Tensor w(all.data, wire, all.numel, all.device);
    const Tensor w_mine = w.slice(rank() * cc, cc);
    comm::WorkPtr work = comm_->reduce_scatter_async(w, w_mine, r.op);
    // In place past Ψ (the last bucket's padding), the buffer's tail must
    // read zero again for the next micro-step.
    Tensor tail;
    if (base >= 0 && base + static_cast<int64_t>(all.numel) > numel_) {
      const int64_t from = std::max(base, numel_);
      tail = all.slice(static_cast<size_t>(from - base), all.numel - (from - base));
    }
    return pipe_.submit(std::move(work), [this, col, mine, w_mine, wire, tail, post = r.post] {
      ZT_RETURN_IF_ERROR(
          device().ops().widen_in_place(w_mine.data, mine.numel, wire, post, mine.ptr<float>()));
      ZT_RETURN_IF_ERROR(take_reduced(col, mine));
      return fill_zero(tail);
    });
  }
  if (r.pre != 1.0f) ZT_RETURN_IF_ERROR(ops.scale(all, r.pre));
  comm::WorkPtr w = comm_->reduce_scatter_async(all, mine, r.op);
  return pipe_.submit(std::move(w), [this, col, mine, post = r.post] {
    if (post != 1.0f) ZT_RETURN_IF_ERROR(device().ops().scale(mine, post));
    return take_reduced(col, mine);
  });
}

// reduce_scatter false: all-reduce in buckets of the full gradients (in
// place in the model's buffer; 16-bit stage 1 through an fp32 staging
// bucket), keep the own piece.
Status ShardedStrategy::allreduce_buckets() {
  const int n = world();
  const ReductionPolicy r = reduction_policy(options_, n);
  const device::Ops& ops = device().ops();
  for (const Range& b : contiguous_buckets({0, numel_}, options_.reduce_bucket_size)) {
    Tensor g;
    if (grads_.empty()) {
      const auto bytes = static_cast<size_t>(b.count) * sizeof(float);
      if (allreduce_staging_.bytes() < bytes) {
        ZT_ASSIGN_OR_RETURN(
            allreduce_staging_,
            device().allocate(bytes, device::MemoryCategory::kBuffers, "all-reduce staging"));
      }
      g = allreduce_staging_.tensor(DType::kFloat32, 0, static_cast<size_t>(b.count));
      ZT_RETURN_IF_ERROR(read_gradients(b, g));
    } else {
      g = grads_.slice(static_cast<size_t>(b.offset), b.count);
    }
    if (n > 1 && options_.grad_wire != DType::kFloat32) {
      const DType wire = options_.grad_wire;
      ZT_RETURN_IF_ERROR(ops.narrow_in_place(g, r.pre, wire));  // in place, as stage 0
      const Tensor w(g.data, wire, g.numel, g.device);
      ZT_RETURN_IF_ERROR(comm_->allreduce(w, r.op));
      ZT_RETURN_IF_ERROR(ops.widen_in_place(w.data, g.numel, wire, 1.0f, g.ptr<float>()));
    } else if (n > 1) {
      if (r.pre != 1.0f) ZT_RETURN_IF_ERROR(ops.scale(g, r.pre));
      ZT_RETURN_IF_ERROR(comm_->allreduce(g, r.op));
    }
    for (const SlotRun& run : own_runs_) {
      const Range mine = intersect(b, {run.flat, run.count});
      if (mine.count <= 0) continue;
      const Tensor piece = g.slice(static_cast<size_t>(mine.offset - b.offset), mine.count);
      if (r.post != 1.0f) ZT_RETURN_IF_ERROR(ops.scale(piece, r.post));
      ZT_RETURN_IF_ERROR(take_reduced({run.slot + mine.offset - run.flat, mine.count}, piece));
    }
  }
  return Status();
}

}  // namespace zerotrain::zero
