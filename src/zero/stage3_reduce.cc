// ZeRO stage 3: the gradient path — full group gradient buffers bound for
// the backward, reduce-scatter of each group as it becomes final, and the
// fp32 view the engine's boundary step reads (see stage3_strategy.h).
#include <algorithm>

#include "device/ops.h"
#include "zero/memory_ops.h"
#include "zero/pass_trace.h"
#include "zero/stage3_strategy.h"

namespace zerotrain::zero {
namespace {

// Reduce-scatter buckets kept in flight with overlap_comm (double
// buffering, as DeepSpeed's two ipg buffers).
constexpr size_t kReducesInFlight = 2;

// out[0, count) = compact elements [begin, begin + count) of list l from the
// full group buffer, zero past the list's end.
Status copy_compact(const CompactList& l, int64_t group_offset, ConstTensor full, int64_t begin,
                    int64_t count, Tensor out) {
  ZT_RETURN_IF_ERROR(fill_zero(out.slice(0, static_cast<size_t>(count))));
  const int64_t end = begin + count;
  Status st;
  for_each_extent(l, [&](int64_t flat, int64_t c, int64_t n) {
    const int64_t lo = std::max(begin, c), hi = std::min(end, c + n);
    if (lo < hi && st.ok())
      st = device::copy(full.slice(static_cast<size_t>(flat - group_offset + (lo - c)), hi - lo),
                        out.slice(static_cast<size_t>(lo - begin), hi - lo));
  });
  return st;
}

// grads += compact range col of list l, over this rank's pieces that meet
// it: piece elements [lo, hi) (compact) read from at(piece, lo, hi - lo).
template <typename At>
Status add_owned(PartitionArray& grads, const CompactList& l, Range col, At at) {
  for (const Piece& piece : l.mine) {
    const int64_t lo = std::max(piece.compact, col.offset);
    const int64_t hi = std::min(piece.compact + piece.count, col.end());
    if (lo < hi)
      ZT_RETURN_IF_ERROR(grads.add(static_cast<size_t>(piece.owned + (lo - piece.compact)),
                                   at(piece, lo, hi - lo)));
  }
  return Status();
}

}  // namespace

Status Stage3Strategy::on_before_backward(int s) {
  ZT_RETURN_IF_ERROR(coordinator_.before_step(backward_step(*model_, s)));
  for (int g : model_->grad_groups_written(s)) {
    GroupBuffers& b = buffers_[static_cast<size_t>(g)];
    if (!b.grads.empty()) continue;  // group 0: bound since the head's stage
    if (layout_.group(g).numel == 0) continue;  // nothing trains here (LoRA)
    const auto bytes = static_cast<size_t>(layout_.group(g).numel) * sizeof(float);
    ZT_ASSIGN_OR_RETURN(b.grads, pool_.acquire(bytes));
    ZT_RETURN_IF_ERROR(device().fill_zero(b.grads.data(), bytes));  // backward adds into it
    model_->set_group_gradients(g, b.grads.as<float>());
  }
  return Status();
}

// Group s's gradients are final once its stage is done (group 0's after
// the encoder's, the last): reduce them first, then release parameters.
Status Stage3Strategy::on_after_backward(int s) {
  ZT_RETURN_IF_ERROR(reduce_group(s));
  return coordinator_.after_step(backward_step(*model_, s));
}

Status Stage3Strategy::reduce_group(int g) {
  GroupBuffers& b = buffers_[static_cast<size_t>(g)];
  if (layout_.group(g).numel == 0) return Status();  // nothing trains here (LoRA)
  if (b.grads.empty())
    return internal_error("stage 3: group " + std::to_string(g) +
                          " has no gradient buffer to reduce (backward out of order)");
  const GroupPlan& plan = layout_.group(g);
  for (const CompactList* l : {&plan.gathered, &plan.persistent}) {
    if (l->count == 0) continue;
    const int64_t per = bucket_shard(options_.reduce_bucket_size, world(), l->chunk);
    for (const Range& col : bucket_columns(l->chunk, per))
      ZT_RETURN_IF_ERROR(reduce_column(g, *l, col));
  }
  // The buckets hold copies: the full buffer can go now.
  model_->set_group_gradients(g, nullptr);
  pool_.release(std::move(b.grads));
  return Status();
}

// Column `col` (chunk-relative) of every rank's chunk of list l into one
// staging bucket, reduce-scattered into this rank's piece of it. At world
// size 1 the column goes straight from the full buffer into the partition.
Status Stage3Strategy::reduce_column(int g, const CompactList& l, Range col) {
  const int n = world();
  const Tensor full = group_tensor(g, buffers_[static_cast<size_t>(g)].grads);
  const int64_t base = layout_.group(g).offset;
  if (n == 1) {  // nothing to reduce and no scaling: added straight from the full buffer
    return add_owned(grads_, l, col, [&](const Piece& piece, int64_t lo, int64_t count) {
      return full.slice(static_cast<size_t>(piece.flat + (lo - piece.compact) - base), count);
    });
  }
  const auto cc = static_cast<size_t>(col.count);
  ZT_ASSIGN_OR_RETURN(device::Buffer staging, pool_.acquire(n * cc * sizeof(float)));
  const Tensor all = staging.tensor(DType::kFloat32, 0, n * cc);
  for (int r = 0; r < n; ++r)
    ZT_RETURN_IF_ERROR(
        copy_compact(l, base, full, r * l.chunk + col.offset, col.count, all.slice(r * cc, cc)));
  const ReductionPolicy rp = reduction_policy(options_, n);
  PendingReduce p{.staging = std::move(staging), .work = nullptr, .list = &l, .col = col};
  const device::Ops& ops = device().ops();
  const DType wire = options_.grad_wire;
  if (wire != DType::kFloat32) {
    // 16 bits: narrowed in place; finish_reduce widens the piece back.
    ZT_RETURN_IF_ERROR(ops.narrow_in_place(all, rp.pre, wire));
    const Tensor w(all.data, wire, all.numel, all.device);
    p.work = comm_->reduce_scatter_async(w, w.slice(rank() * cc, cc), rp.op);
  } else {
    if (rp.pre != 1.0f) ZT_RETURN_IF_ERROR(ops.scale(all, rp.pre));
    p.work = comm_->reduce_scatter_async(all, all.slice(rank() * cc, cc), rp.op);
  }
  reduces_.push_back(std::move(p));
  const size_t limit = options_.overlap_comm ? kReducesInFlight : 0;
  while (reduces_.size() > limit) {
    Status s = finish_reduce(reduces_.front());
    reduces_.pop_front();
    ZT_RETURN_IF_ERROR(s);
  }
  return Status();
}

// The arrived piece, post-scaled, added into the gradient partition.
Status Stage3Strategy::finish_reduce(PendingReduce& p) {
  if (p.work) {
    Status s = p.work->wait();
    p.work.reset();
    if (!s.ok()) {
      pool_.release(std::move(p.staging));
      return s;
    }
  }
  const auto cc = static_cast<size_t>(p.col.count);
  const Tensor mine = p.staging.tensor(DType::kFloat32, static_cast<size_t>(rank()) * cc, cc);
  const ReductionPolicy rp = reduction_policy(options_, world());
  const device::Ops& ops = device().ops();
  const DType wire = options_.grad_wire;
  if (wire != DType::kFloat32) {
    const Tensor w_mine = p.staging.tensor(wire, static_cast<size_t>(rank()) * cc, cc);
    ZT_RETURN_IF_ERROR(ops.widen_in_place(w_mine.data, cc, wire, rp.post, mine.ptr<float>()));
  } else if (rp.post != 1.0f) {
    ZT_RETURN_IF_ERROR(ops.scale(mine, rp.post));
  }
  ZT_RETURN_IF_ERROR(
      add_owned(grads_, *p.list, p.col, [&](const Piece&, int64_t lo, int64_t count) {
        return mine.slice(static_cast<size_t>(lo - p.col.offset), count);
      }));
  pool_.release(std::move(p.staging));
  return Status();
}

Status Stage3Strategy::drain_reduces() {
  Status first;
  while (!reduces_.empty()) {
    Status s = finish_reduce(reduces_.front());
    reduces_.pop_front();
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

Status Stage3Strategy::after_backward(bool /*boundary*/) { return drain_reduces(); }

Status Stage3Strategy::reduce_gradients() {
  ZT_RETURN_IF_ERROR(drain_reduces());
  if (param_dtype_ == DType::kFloat32) return Status();  // owned_grads_ is grads_
  const auto own = static_cast<size_t>(layout_.owned_numel());
  ZT_ASSIGN_OR_RETURN(step_grads_,
                      PartitionArray::allocate(device(), DType::kFloat32, own,
                                               {.host = options_.offload_optimizer,
                                                .pin = options_.pin_memory,
                                                .category = device::MemoryCategory::kBuffers},
                                               "fp32 gradients of the step"));
  owned_grads_ = step_grads_.tensor();
  return grads_.read(0, owned_grads_);
}

void Stage3Strategy::zero_gradients() {
  (void)drain_reduces();
  const Status s = grads_.fill_zero();
  ZT_CHECK(s.ok(), s.to_string());
  if (param_dtype_ != DType::kFloat32) {
    step_grads_ = PartitionArray();
    owned_grads_ = {};
  }
  // An aborted backward may leave full buffers bound: the sum is partial.
  for (size_t g = 0; g < buffers_.size(); ++g) {
    if (buffers_[g].grads.empty()) continue;
    model_->set_group_gradients(static_cast<int>(g), nullptr);
    pool_.release(std::move(buffers_[g].grads));
  }
}

}  // namespace zerotrain::zero
