// ZeRO stage 2: every micro-step reduced into the partition accumulator
// (see stage2_strategy.h).
#include "zero/stage2_strategy.h"

#include <vector>

#include "zero/memory_ops.h"

namespace zerotrain::zero {

StatusOr<std::unique_ptr<Stage2Strategy>> Stage2Strategy::create(model::Module* model,
                                                                 comm::Communicator* comm,
                                                                 const StrategyOptions& o) {
  std::unique_ptr<Stage2Strategy> s(new Stage2Strategy(model, comm, o));
  // Ownership buckets of reduce_bucket_size: a bucket is final as soon as
  // backward has passed it, so its reduce-scatter overlaps the rest.
  ZT_RETURN_IF_ERROR(s->init(o.reduce_bucket_size));
  s->reducing_pass_ = true;
  return s;
}

// The accumulator is always apart: fp32 in an owned partition, 16-bit in
// the model dtype (on the host with offload).
Status Stage2Strategy::allocate_gradients(bool /*contiguous*/, int64_t /*own_offset*/) {
  separate_grads_ = true;
  if (options_.dtype != DType::kFloat32) {
    ZT_ASSIGN_OR_RETURN(grad_part16_, PartitionArray::allocate(
                                          device(), options_.dtype, static_cast<size_t>(own_count_),
                                          {.host = options_.offload_optimizer,
                                           .pin = options_.pin_memory,
                                           .category = device::MemoryCategory::kGradients},
                                          "16-bit gradient partition"));
    return Status();
  }
  ZT_ASSIGN_OR_RETURN(
      owned_grads_, allocate_owned("fp32 gradient partition", device::MemoryCategory::kGradients));
  return Status();
}

// The reduced own elements are added: into the 16-bit accumulator
// (rounded), or the fp32 partition.
Status Stage2Strategy::take_reduced(Range col, ConstTensor mine) {
  const Range own = intersect(col, {0, own_count_});  // slots
  if (own.count <= 0) return Status();
  const ConstTensor real = mine.slice(0, own.count);
  if (grad_part16_.size() > 0) return grad_part16_.add(static_cast<size_t>(own.offset), real);
  ZT_RETURN_IF_ERROR(ensure_step_gradients());
  return add_to(owned_grads_.slice(static_cast<size_t>(own.offset), own.count), real);
}

// A column reduce-scatters in place in the gradient buffer (no staging
// copy; the buffer is cleared after the micro-step's reductions) when its
// N chunks lie there back to back from some flat `base`, rank r's at
// base + r·cc, each full or ending at Ψ (what lies past Ψ is the buffer's
// zeroed tail, up to grads_capacity_): the usual case, as each column is
// one ownership bucket. Returns base, or -1 to go through the staging slot.
int64_t Stage2Strategy::in_place_base(Range col) const {
  if (grads_.empty() || world() == 1) return -1;
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

Status Stage2Strategy::after_backward(bool /*boundary*/) {
  ZT_RETURN_IF_ERROR(finish_gathers());  // a backward without forward hooks
  reducing_pass_ = true;
  if (options_.reduce_scatter) {
    // Buckets the hooks did not launch (all of them without hooks), top
    // down; then every bucket in flight must land before the model's
    // buffer is cleared for the next micro-step.
    ZT_RETURN_IF_ERROR(reduce_pending_columns());
  } else {
    ZT_RETURN_IF_ERROR(allreduce_buckets());
  }
  model_->zero_gradients();
  reset_micro_step();
  return Status();
}

Status Stage2Strategy::reduce_gradients() {
  ZT_RETURN_IF_ERROR(finish_gathers());
  if (grad_part16_.size() == 0) return Status();  // fp32: reduced every micro-step
  if (options_.optimizer_reads_16bit_gradients) {
    // The optimizer widens each gradient as it reads it: no fp32 copy of
    // the partition (nor its fresh pages every step).
    owned_grads_ = grad_part16_.tensor();
    return Status();
  }
  // The fp32 view of the 16-bit sums; the backward is over, so it may live
  // in the model's idle activation memory.
  if (owned_grads_.empty() && !options_.offload_optimizer) {
    if (float* lent = model_->lend_activation_memory(own_count_)) {
      owned_grads_ = Tensor(lent, DType::kFloat32, static_cast<size_t>(own_count_), &device());
      activations_lent_ = true;
    }
  }
  ZT_RETURN_IF_ERROR(ensure_step_gradients());
  return grad_part16_.read(0, owned_grads_);
}

}  // namespace zerotrain::zero
