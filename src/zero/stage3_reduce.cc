// ZeRO stage 3: the gradient path — full group gradient buffers bound for
// the backward, reduce-scatter of each group as it becomes final, and the
// fp32 view the engine's boundary step reads (see stage3_strategy.h).
#include <algorithm>
#include <cstring>

#include "optim/grad_utils.h"
#include "zero/grad_wire.h"
#include "zero/pass_trace.h"
#include "zero/stage3_strategy.h"

namespace zerotrain::zero {
namespace {

// Reduce-scatter buckets kept in flight with overlap_comm (double
// buffering, as DeepSpeed's two ipg buffers).
constexpr size_t kReducesInFlight = 2;

// Stage 0's reductions: mean = kAvg; prescale = g/N then sum; predivide f
// = g/f, sum, then * f/N; sum = sum.
struct Scaling {
  float pre = 1.0f, post = 1.0f;
  comm::ReduceOp op = comm::ReduceOp::kSum;
};

Scaling scaling_for(const Stage3Options& o, int n) {
  if (n == 1 || o.allreduce_op == config::AllreduceOp::kSum) return {};
  if (o.prescale) return {1.0f / static_cast<float>(n), 1.0f, comm::ReduceOp::kSum};
  if (o.predivide_factor == 1.0) return {1.0f, 1.0f, comm::ReduceOp::kAvg};
  return {static_cast<float>(1.0 / o.predivide_factor), static_cast<float>(o.predivide_factor / n),
          comm::ReduceOp::kSum};
}

// out[0, count) = compact elements [begin, begin + count) of list l from the
// full group buffer, zero past the list's end.
void copy_compact(const CompactList& l, int64_t group_offset, const float* full, int64_t begin,
                  int64_t count, float* out) {
  std::fill(out, out + count, 0.0f);
  const int64_t end = begin + count;
  for_each_extent(l, [&](int64_t flat, int64_t c, int64_t n) {
    const int64_t lo = std::max(begin, c), hi = std::min(end, c + n);
    if (lo < hi)
      std::memcpy(out + (lo - begin), full + (flat - group_offset) + (lo - c),
                  static_cast<size_t>(hi - lo) * sizeof(float));
  });
}

// grads += compact range col of list l, over this rank's pieces that meet
// it: piece elements [lo, hi) (compact) read from at(piece, lo).
template <typename At>
void add_owned(PartitionArray& grads, const CompactList& l, Range col, At at) {
  for (const Piece& piece : l.mine) {
    const int64_t lo = std::max(piece.compact, col.offset);
    const int64_t hi = std::min(piece.compact + piece.count, col.end());
    if (lo < hi)
      grads.add(static_cast<size_t>(piece.owned + (lo - piece.compact)),
                {at(piece, lo), static_cast<size_t>(hi - lo)});
  }
}

}  // namespace

Status Stage3Strategy::on_before_backward(int s) {
  ZT_RETURN_IF_ERROR(coordinator_.before_step(backward_step(*options_.model, s)));
  for (int g : options_.model->grad_groups_written(s)) {
    GroupBuffers& b = buffers_[static_cast<size_t>(g)];
    if (!b.grads.empty()) continue;  // group 0: bound since the head's stage
    const auto bytes = static_cast<size_t>(layout_.group(g).numel) * sizeof(float);
    ZT_ASSIGN_OR_RETURN(b.grads, pool_.acquire(bytes));
    std::memset(b.grads.data(), 0, bytes);  // backward adds into it
    options_.model->set_group_gradients(g, reinterpret_cast<float*>(b.grads.data()));
  }
  return Status();
}

// Group s's gradients are final once its stage is done (group 0's after
// the encoder's, the last): reduce them first, then release parameters.
Status Stage3Strategy::on_after_backward(int s) {
  ZT_RETURN_IF_ERROR(reduce_group(s));
  return coordinator_.after_step(backward_step(*options_.model, s));
}

Status Stage3Strategy::reduce_group(int g) {
  GroupBuffers& b = buffers_[static_cast<size_t>(g)];
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
  options_.model->set_group_gradients(g, nullptr);
  pool_.release(std::move(b.grads));
  return Status();
}

// Column `col` (chunk-relative) of every rank's chunk of list l into one
// staging bucket, reduce-scattered into this rank's piece of it. At world
// size 1 the column goes straight from the full buffer into the partition.
Status Stage3Strategy::reduce_column(int g, const CompactList& l, Range col) {
  const int n = world();
  const float* full = reinterpret_cast<const float*>(buffers_[static_cast<size_t>(g)].grads.data());
  if (n == 1) {  // nothing to reduce and no scaling: added straight from the full buffer
    const int64_t base = layout_.group(g).offset;
    add_owned(grads_, l, col, [&](const Piece& piece, int64_t lo) {
      return full + (piece.flat + (lo - piece.compact) - base);
    });
    return Status();
  }
  const auto cc = static_cast<size_t>(col.count);
  ZT_ASSIGN_OR_RETURN(BufferPool::Buffer staging, pool_.acquire(n * cc * sizeof(float)));
  float* all = reinterpret_cast<float*>(staging.data());
  for (int r = 0; r < n; ++r)
    copy_compact(l, layout_.group(g).offset, full, r * l.chunk + col.offset, col.count,
                 all + r * cc);
  const Scaling sc = scaling_for(options_, n);
  PendingReduce p{.staging = std::move(staging), .work = nullptr, .list = &l, .col = col};
  const DType wire = options_.grad_wire;
  if (wire != DType::kFloat32) {
    // 16 bits: narrowed in place; finish_reduce widens the piece back.
    std::span<std::byte> w = narrow_in_place({all, n * cc}, sc.pre, wire);
    const size_t es = dtype_size(wire);
    p.work =
        options_.comm->reduce_scatter_async(w, w.subspan(rank() * cc * es, cc * es), wire, sc.op);
  } else {
    if (sc.pre != 1.0f) optim::scale_in_place({all, n * cc}, sc.pre);
    std::span<float> everything(all, n * cc), mine(all + rank() * cc, cc);
    p.work = options_.comm->reduce_scatter_async(
        std::as_bytes(everything), std::as_writable_bytes(mine), comm::DType::kFloat32, sc.op);
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
  float* mine = reinterpret_cast<float*>(p.staging.data()) + static_cast<size_t>(rank()) * cc;
  const Scaling sc = scaling_for(options_, world());
  const DType wire = options_.grad_wire;
  if (wire != DType::kFloat32) {
    const std::byte* w_mine =
        p.staging.data() + static_cast<size_t>(rank()) * cc * dtype_size(wire);
    widen_in_place(w_mine, cc, wire, sc.post, mine);
  } else if (sc.post != 1.0f) {
    optim::scale_in_place({mine, cc}, sc.post);
  }
  add_owned(grads_, *p.list, p.col,
            [&](const Piece&, int64_t lo) -> const float* { return mine + (lo - p.col.offset); });
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
                      PartitionArray::allocate(DType::kFloat32, own,
                                               options_.offload_optimizer, options_.pin_memory));
  owned_grads_ = step_grads_.f32();
  grads_.read(0, own, owned_grads_.data());
  return Status();
}

void Stage3Strategy::zero_gradients() {
  (void)drain_reduces();
  grads_.fill_zero();
  if (param_dtype_ != DType::kFloat32) {
    step_grads_ = PartitionArray();
    owned_grads_ = {};
  }
  // An aborted backward may leave full buffers bound: the sum is partial.
  for (size_t g = 0; g < buffers_.size(); ++g) {
    if (buffers_[g].grads.empty()) continue;
    options_.model->set_group_gradients(static_cast<int>(g), nullptr);
    pool_.release(std::move(buffers_[g].grads));
  }
}

}  // namespace zerotrain::zero
