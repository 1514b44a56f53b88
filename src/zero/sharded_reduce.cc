// ZeRO stages 1-2: gradient reduction into the owned partition, bucket by
// bucket (see sharded_strategy.h).
#include <algorithm>
#include <cstring>
#include <utility>

#include "optim/grad_utils.h"
#include "zero/grad_wire.h"
#include "zero/sharded_strategy.h"

namespace zerotrain::zero {
namespace {

// Stage 0's reductions (DeepSpeed's allreduce_bucket): mean = kAvg; prescale
// = g/N then sum; predivide f = g/f, sum, then * f/N; sum = sum.
struct Scaling {
  float pre = 1.0f, post = 1.0f;
  comm::ReduceOp op = comm::ReduceOp::kSum;
};

Scaling scaling_for(const ShardedOptions& o, int n) {
  if (n == 1 || o.allreduce_op == config::AllreduceOp::kSum) return {};
  if (o.prescale) return {1.0f / static_cast<float>(n), 1.0f, comm::ReduceOp::kSum};
  if (o.predivide_factor == 1.0) return {1.0f, 1.0f, comm::ReduceOp::kAvg};
  return {static_cast<float>(1.0 / o.predivide_factor), static_cast<float>(o.predivide_factor / n),
          comm::ReduceOp::kSum};
}

void add_into(std::span<float> dst, std::span<const float> src) {
  for (size_t i = 0; i < src.size(); ++i) dst[i] += src[i];
}

}  // namespace

ShardedStrategy::~ShardedStrategy() {
  if (hooks_installed_) options_.model->set_hooks({});
  // 16-bit stage 2 bound its own backward buffer, about to be freed.
  if (!stage2_grads_.empty()) options_.model->set_gradients(nullptr);
}

void ShardedStrategy::install_hooks() {
  // The final region grows as a suffix only if the groups tile [0, Ψ).
  const auto& groups = options_.model->layout().groups();
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
    const auto& grp = options_.model->layout().groups()[static_cast<size_t>(g)];
    ZT_RETURN_IF_ERROR(await_gathers(grp.offset + grp.numel));
    return half() ? half_->before_forward(g) : Status();
  };
  h.after_forward = [this](int g) {
    if (half()) ZT_RETURN_IF_ERROR(half_->after_forward(g));
    if (g == options_.model->num_groups() - 1) return finish_gathers();
    return pump_gathers();
  };
  if (half()) h.before_backward = [this](int g) { return half_->before_backward(g); };
  // 16-bit stage 1: group g's gradients reach the accumulator first.
  h.after_backward = [this, reduce_hook](int g) {
    if (half()) ZT_RETURN_IF_ERROR(half_->after_backward(g));
    return reduce_hook ? on_group_final(g) : Status();
  };
  options_.model->set_hooks(std::move(h));
  hooks_installed_ = true;
}

void ShardedStrategy::reset_micro_step() {
  pending_cols_ = reduce_cols_.size();
  next_final_group_ = options_.model->num_groups() - 1;
}

void ShardedStrategy::before_backward(bool boundary) {
  reducing_pass_ = options_.stage == 2 || boundary;
}

Status ShardedStrategy::on_group_final(int group) {
  if (!reducing_pass_) return Status();  // stage 1 before the boundary: accumulate only
  if (group != next_final_group_) {
    next_final_group_ = -2;  // out of the expected order: flush at the end
    return Status();
  }
  next_final_group_ = group - 1;
  const int64_t final_begin = options_.model->layout().groups()[group].offset;
  while (pending_cols_ > 0 && reduce_floor_[pending_cols_ - 1] >= final_begin) {
    ZT_RETURN_IF_ERROR(reduce_column(pending_cols_ - 1));
    --pending_cols_;
    ++hook_flushed_;
  }
  return Status();
}

void ShardedStrategy::read_gradients(Range src, float* out) const {
  if (src.count <= 0) return;
  if (grads_.empty())  // 16-bit stage 1
    half_->gradients().read(static_cast<size_t>(src.offset), static_cast<size_t>(src.count), out);
  else
    std::memcpy(out, grads_.data() + src.offset, static_cast<size_t>(src.count) * sizeof(float));
}

// Stage 2 reduce-scatters a column in place in the gradient buffer (no
// staging copy; the buffer is cleared after the micro-step's reductions)
// when its N chunks lie there back to back from some flat `base`, rank r's
// at base + r·cc, each full or ending at Ψ (what lies past Ψ is the
// buffer's zeroed tail, up to grads_capacity_): the usual case, as each
// column is one ownership bucket. Returns base, or -1 to go through the
// staging slot.
int64_t ShardedStrategy::in_place_base(Range col) const {
  if (options_.stage != 2 || grads_.empty() || world() == 1) return -1;
  const int64_t cc = col.count;
  int64_t base = -1;
  for (int r = 0; r < world(); ++r) {
    const std::vector<SlotRun> runs = layout_.runs(r, col);
    if (runs.size() > 1) return -1;
    int64_t count = 0;
    if (runs.size() == 1) {
      if (runs[0].slot != col.offset) return -1;
      if (base < 0) base = runs[0].flat - r * cc;
      if (runs[0].flat != base + r * cc) return -1;
      count = runs[0].count;
    }
    if (base < 0) return -1;
    if (count < cc && base + r * cc + count < numel_) return -1;  // a gap before Ψ
  }
  return base + world() * cc <= grads_capacity_ ? base : -1;
}

Status ShardedStrategy::reduce_column(size_t c) {
  const Range col = reduce_cols_[c];
  ZT_RETURN_IF_ERROR(finish_gathers());  // the staging slots are shared
  const int n = world();
  if (n == 1) {  // one rank owns [0, Ψ): slots are flat
    const Range own = intersect(col, {0, own_count_});
    if (!separate_grads_ || own.count == 0) return Status();
    if (grads_.empty()) {  // 16-bit stage 1: straight into the fp32 own gradients
      ZT_RETURN_IF_ERROR(ensure_step_gradients());
      read_gradients(own, owned_grads_.data() + own.offset);
      return Status();
    }
    return take_reduced(col, grads_.subspan(own.offset, own.count));
  }
  const Scaling sc = scaling_for(options_, n);
  const auto cc = static_cast<size_t>(col.count);
  // The slot also orders this collective after the one that used it last.
  ZT_ASSIGN_OR_RETURN(std::span<float> slot, pipe_.next_slot());
  const int64_t base = reduce_base_[c];
  std::span<float> all;
  if (base >= 0) {
    all = std::span<float>(grads_.data(), static_cast<size_t>(grads_capacity_))
              .subspan(static_cast<size_t>(base), n * cc);
  } else {
    all = slot.subspan(0, n * cc);
    for (int r = 0; r < n; ++r) {
      // One run at most (a reduce column stays in one bucket), at the
      // chunk's start: a rank's real elements are a slot prefix.
      std::span<float> chunk = all.subspan(r * cc, cc);
      int64_t filled = 0;
      for (const SlotRun& run : layout_.runs(r, col)) {
        read_gradients({run.flat, run.count}, chunk.data() + (run.slot - col.offset));
        filled = run.slot - col.offset + run.count;
      }
      std::fill(chunk.begin() + filled, chunk.end(), 0.0f);
    }
  }
  std::span<float> mine = all.subspan(rank() * cc, cc);
  const DType wire = options_.grad_wire;
  if (wire != DType::kFloat32) {
    // 16 bits: narrowed in place, reduced there, mine widened back in place.
    std::span<std::byte> w = narrow_in_place(all, sc.pre, wire);
    const size_t es = dtype_size(wire);
    std::span<std::byte> w_mine = w.subspan(rank() * cc * es, cc * es);
    comm::WorkPtr work = options_.comm->reduce_scatter_async(w, w_mine, wire, sc.op);
    // In place past Ψ (the last bucket's padding), the buffer's tail must
    // read zero again for the next micro-step.
    std::span<float> tail;
    if (base >= 0 && base + static_cast<int64_t>(all.size()) > numel_) {
      const int64_t from = std::max(base, numel_);
      tail = all.subspan(static_cast<size_t>(from - base));
    }
    return pipe_.submit(std::move(work), [this, col, mine, w_mine, wire, tail, post = sc.post] {
      widen_in_place(w_mine.data(), mine.size(), wire, post, mine.data());
      ZT_RETURN_IF_ERROR(take_reduced(col, mine));
      std::fill(tail.begin(), tail.end(), 0.0f);
      return Status();
    });
  }
  if (sc.pre != 1.0f) optim::scale_in_place(all, sc.pre);
  comm::WorkPtr w = options_.comm->reduce_scatter_async(
      std::as_bytes(all), std::as_writable_bytes(mine), comm::DType::kFloat32, sc.op);
  return pipe_.submit(std::move(w), [this, col, mine, post = sc.post] {
    if (post != 1.0f) optim::scale_in_place(mine, post);
    return take_reduced(col, mine);
  });
}

// `mine` starts with column col's real own elements: stage 2 adds them
// into the partition accumulator (16-bit: rounded), stage 1 stores them
// (in the model's own slice, the host partition with offload, or the
// transient fp32 slice for 16-bit).
Status ShardedStrategy::take_reduced(Range col, std::span<float> mine) {
  const Range own = intersect(col, {0, own_count_});  // slots
  if (own.count <= 0) return Status();
  std::span<const float> real = mine.subspan(0, own.count);
  if (grad_part16_.size() > 0) {
    grad_part16_.add(static_cast<size_t>(own.offset), real);
    return Status();
  }
  ZT_RETURN_IF_ERROR(ensure_step_gradients());
  std::span<float> dst = owned_grads_.subspan(own.offset, own.count);
  if (options_.stage == 2)
    add_into(dst, real);
  else if (real.data() != dst.data())
    std::memcpy(dst.data(), real.data(), real.size_bytes());
  return Status();
}

// reduce_scatter false: all-reduce in buckets of the full gradients (in
// place in the model's buffer; 16-bit stage 1 through an fp32 staging
// bucket), keep the own piece.
Status ShardedStrategy::allreduce_buckets() {
  const int n = world();
  const Scaling sc = scaling_for(options_, n);
  for (const Range& b : contiguous_buckets({0, numel_}, options_.reduce_bucket_size)) {
    std::span<float> g;
    if (grads_.empty()) {
      if (allreduce_staging_.size() < static_cast<size_t>(b.count)) {
        ZT_ASSIGN_OR_RETURN(allreduce_staging_,
                            device::cpu::AlignedBuffer<float>::allocate(static_cast<size_t>(b.count)));
      }
      g = allreduce_staging_.span().subspan(0, b.count);
      read_gradients(b, g.data());
    } else {
      g = grads_.subspan(b.offset, b.count);
    }
    if (n > 1 && options_.grad_wire != DType::kFloat32) {
      const DType wire = options_.grad_wire;
      std::span<std::byte> w = narrow_in_place(g, sc.pre, wire);  // in place, as stage 0
      ZT_RETURN_IF_ERROR(options_.comm->allreduce(w, wire, sc.op));
      widen_in_place(w.data(), g.size(), wire, 1.0f, g.data());
    } else if (n > 1) {
      if (sc.pre != 1.0f) optim::scale_in_place(g, sc.pre);
      ZT_RETURN_IF_ERROR(options_.comm->allreduce(g, sc.op));
    }
    for (const SlotRun& run : own_runs_) {
      const Range mine = intersect(b, {run.flat, run.count});
      if (mine.count <= 0) continue;
      std::span<float> piece = g.subspan(mine.offset - b.offset, mine.count);
      if (sc.post != 1.0f) optim::scale_in_place(piece, sc.post);
      ZT_RETURN_IF_ERROR(take_reduced({run.slot + mine.offset - run.flat, mine.count}, piece));
    }
  }
  return Status();
}

Status ShardedStrategy::after_backward(bool boundary) {
  ZT_RETURN_IF_ERROR(finish_gathers());  // a backward without forward hooks
  reducing_pass_ = options_.stage == 2;  // until before_backward says otherwise
  if (options_.stage == 1) {
    // The boundary's backward launched the buckets that became final; the
    // rest go now and all land before the engine reads the gradients.
    if (boundary && options_.reduce_scatter) {
      for (; pending_cols_ > 0; --pending_cols_)
        ZT_RETURN_IF_ERROR(reduce_column(pending_cols_ - 1));
      ZT_RETURN_IF_ERROR(pipe_.drain());
      reduced_in_backward_ = true;
    }
    reset_micro_step();
    return Status();
  }
  if (options_.reduce_scatter) {
    // Buckets the hooks did not launch (all of them without hooks), top
    // down; then every bucket in flight must land before the model's
    // buffer is cleared for the next micro-step.
    for (; pending_cols_ > 0; --pending_cols_) ZT_RETURN_IF_ERROR(reduce_column(pending_cols_ - 1));
    ZT_RETURN_IF_ERROR(pipe_.drain());
  } else {
    ZT_RETURN_IF_ERROR(allreduce_buckets());
  }
  options_.model->zero_gradients();
  reset_micro_step();
  return Status();
}

Status ShardedStrategy::reduce_gradients() {
  ZT_RETURN_IF_ERROR(finish_gathers());
  if (options_.stage == 2) {  // reduced every micro-step
    if (grad_part16_.size() == 0) return Status();
    // The fp32 view of the 16-bit sums; the backward is over, so it may
    // live in the model's idle activation memory.
    if (owned_grads_.empty() && !options_.offload_optimizer) {
      if (float* lent = options_.model->lend_activation_memory(own_count_)) {
        owned_grads_ = {lent, static_cast<size_t>(own_count_)};
        activations_lent_ = true;
      }
    }
    ZT_RETURN_IF_ERROR(ensure_step_gradients());
    grad_part16_.read(0, owned_grads_.size(), owned_grads_.data());
    return Status();
  }
  if (!std::exchange(reduced_in_backward_, false)) {  // else stage 1 did it in the hooks
    if (!options_.reduce_scatter) {
      ZT_RETURN_IF_ERROR(allreduce_buckets());
    } else {
      for (size_t c = 0; c < reduce_cols_.size(); ++c) ZT_RETURN_IF_ERROR(reduce_column(c));
      ZT_RETURN_IF_ERROR(pipe_.drain());
    }
  }
  return ensure_step_gradients();  // 16-bit: exists even if no bucket held own elements
}

}  // namespace zerotrain::zero
