// ZeRO stage 1: the boundary micro-step's reduction (see stage1_strategy.h).
#include "zero/stage1_strategy.h"

#include <algorithm>
#include <utility>

#include "zero/memory_ops.h"

namespace zerotrain::zero {

StatusOr<std::unique_ptr<Stage1Strategy>> Stage1Strategy::create(model::Module* model,
                                                                 comm::Communicator* comm,
                                                                 const StrategyOptions& o) {
  std::unique_ptr<Stage1Strategy> s(new Stage1Strategy(model, comm, o));
  // fp32 keeps one contiguous shard, so the model's own slice doubles as
  // the master and the reduced gradients (it reduces once a step, at the
  // boundary); 16-bit owns chunks of contiguous reduce buckets, which
  // become final in backward order. The layout depends on the stage and
  // dtype only, so offload and overlap_comm never change which rank sums
  // what: same floats.
  const int n = comm != nullptr ? comm->world_size() : 1;
  const int64_t numel = model != nullptr ? model->layout().total_numel() : 0;
  const int64_t bucket = o.dtype == DType::kFloat32 ? std::max<int64_t>(padded_numel(numel, n), 1)
                                                    : o.reduce_bucket_size;
  ZT_RETURN_IF_ERROR(s->init(bucket));
  return s;
}

// fp32 reduces into the model's own slice unless the optimizer's gradients
// must be on the host (or the slice is not one range); 16-bit's optimizer
// gradients are transient unless offloaded (ensure_step_gradients), or,
// at one rank with an optimizer that reads 16-bit gradients, the [Ψ]
// accumulator itself (reduce_column).
Status Stage1Strategy::allocate_gradients(bool contiguous, int64_t own_offset) {
  const bool half16 = options_.dtype != DType::kFloat32;
  separate_grads_ = options_.offload_optimizer || half16 || !contiguous;
  if (half16 && !options_.offload_optimizer) {
    owned_grads_ = {};  // from the first reduced bucket on
  } else if (separate_grads_) {
    ZT_ASSIGN_OR_RETURN(owned_grads_, allocate_owned("fp32 gradient partition",
                                                     device::MemoryCategory::kGradients));
  } else {
    owned_grads_ = grads_.slice(static_cast<size_t>(own_offset), static_cast<size_t>(own_count_));
  }
  return Status();
}

// The reduced own elements are stored: in the model's own slice, the host
// partition with offload, or the transient fp32 slice for 16-bit.
Status Stage1Strategy::take_reduced(Range col, ConstTensor mine) {
  const Range own = intersect(col, {0, own_count_});  // slots
  if (own.count <= 0) return Status();
  ZT_RETURN_IF_ERROR(ensure_step_gradients());
  const ConstTensor real = mine.slice(0, own.count);
  const Tensor dst = owned_grads_.slice(static_cast<size_t>(own.offset), own.count);
  if (real.data == dst.data) return Status();
  return convert_to(real, dst);
}

Status Stage1Strategy::after_backward(bool boundary) {
  ZT_RETURN_IF_ERROR(finish_gathers());  // a backward without forward hooks
  reducing_pass_ = false;                // until before_backward says otherwise
  // The boundary's backward launched the buckets that became final; the
  // rest go now and all land before the engine reads the gradients.
  if (boundary && options_.reduce_scatter) {
    ZT_RETURN_IF_ERROR(reduce_pending_columns());
    reduced_in_backward_ = true;
  }
  reset_micro_step();
  return Status();
}

Status Stage1Strategy::reduce_gradients() {
  ZT_RETURN_IF_ERROR(finish_gathers());
  if (!std::exchange(reduced_in_backward_, false)) {  // else the hooks did it
    if (!options_.reduce_scatter) {
      ZT_RETURN_IF_ERROR(allreduce_buckets());
    } else {
      for (size_t c = 0; c < reduce_cols_.size(); ++c) ZT_RETURN_IF_ERROR(reduce_column(c));
      ZT_RETURN_IF_ERROR(pipe_.drain());
    }
  }
  return ensure_step_gradients();  // 16-bit: exists even if no bucket held own elements
}

void Stage1Strategy::zero_gradients() {
  reduced_in_backward_ = false;
  ShardedStrategy::zero_gradients();
}

}  // namespace zerotrain::zero
