// ZeRO stages 1-2, shared: construction, the owned arrays, memory and
// zeroing (see sharded_strategy.h); the parameter all-gather is in
// sharded_gather.cc, the gradient reduction in sharded_reduce.cc.
#include "zero/sharded_strategy.h"

#include <algorithm>
#include <string>
#include <utility>

#include "zero/memory_ops.h"

namespace zerotrain::zero {
namespace {

using device::MemoryCategory;

Status validate(const model::Module* model, const StrategyOptions& o) {
  if (model->parameters() == nullptr || model->gradients() == nullptr)
    return invalid_argument(
        "ShardedStrategy: the model needs flat parameter and gradient buffers "
        "(ModuleOptions own_parameters/own_gradients, or set_parameters/set_gradients)");
  if (o.reduce_bucket_size < 1)
    return invalid_argument("zero_optimization.reduce_bucket_size: must be >= 1, got " +
                            std::to_string(o.reduce_bucket_size));
  if (o.allgather_bucket_size < 1)
    return invalid_argument("zero_optimization.allgather_bucket_size: must be >= 1, got " +
                            std::to_string(o.allgather_bucket_size));
  return validate_common(o);
}

}  // namespace

StatusOr<Tensor> ShardedStrategy::allocate_owned(const char* what, MemoryCategory category) {
  ZT_ASSIGN_OR_RETURN(
      PartitionArray a,
      PartitionArray::allocate(
          device(), DType::kFloat32, static_cast<size_t>(own_count_),
          {.host = options_.offload_optimizer, .pin = options_.pin_memory, .category = category},
          what));
  // Its memory stays where it is as the array moves into owned_.
  const Tensor t = a.tensor();
  owned_.push_back(std::move(a));
  return t;
}

Status ShardedStrategy::init(int64_t owner_bucket) {
  if (model_ == nullptr || comm_ == nullptr)
    return invalid_argument("ShardedStrategy: model and comm are required");
  ZT_RETURN_IF_ERROR(validate(model_, options_));
  const int n = world();
  device::Device& d = device();
  numel_ = model_->layout().total_numel();
  layout_ = ShardLayout(numel_, n, owner_bucket);
  own_count_ = layout_.owned_count(rank());
  own_runs_ = layout_.runs(rank(), {0, layout_.slots()});
  params_ = Tensor(model_->parameters(), DType::kFloat32, static_cast<size_t>(numel_), &d);
  grads_ = Tensor(model_->gradients(), DType::kFloat32, static_cast<size_t>(numel_), &d);
  grads_capacity_ = numel_;
  if (n > 1) ZT_RETURN_IF_ERROR(comm_->broadcast(params_, 0));
  // fp32 without offload: the model's slice is the master when this rank
  // owns one contiguous range (stage 1, or one rank).
  const std::vector<Range> ranges = layout_.owned_ranges(rank());
  const bool contiguous = ranges.size() <= 1;
  const int64_t own = ranges.empty() ? 0 : ranges.front().offset;
  separate_master_ = options_.dtype != DType::kFloat32 || options_.offload_optimizer || !contiguous;
  if (separate_master_) {
    ZT_ASSIGN_OR_RETURN(master_,
                        allocate_owned("fp32 master weights", MemoryCategory::kMasterWeights));
    for (const SlotRun& r : own_runs_)
      ZT_RETURN_IF_ERROR(device::copy(params_.slice(static_cast<size_t>(r.flat), r.count),
                                      master_.slice(static_cast<size_t>(r.slot), r.count)));
  } else {
    master_ = params_.slice(static_cast<size_t>(own), static_cast<size_t>(own_count_));
  }
  for (int i = 0; i < options_.state_count; ++i) {
    ZT_ASSIGN_OR_RETURN(Tensor st,
                        allocate_owned("optimizer states", MemoryCategory::kOptimizerStates));
    state_tensors_.push_back(st);
  }
  ZT_RETURN_IF_ERROR(allocate_gradients(contiguous, own));
  // Every rank holds the same broadcast weights: the 16-bit copy rounds
  // them locally.
  if (options_.dtype != DType::kFloat32) ZT_RETURN_IF_ERROR(make_half_copy());
  const int64_t q = layout_.slots();
  reduce_cols_ = layout_.reduce_columns(bucket_shard(options_.reduce_bucket_size, n, q));
  for (const Range& col : reduce_cols_) {
    reduce_floor_.push_back(layout_.column_floor(col));
    reduce_base_.push_back(in_place_base(col));
  }
  gather_cols_ = contiguous_buckets({0, q}, bucket_shard(options_.allgather_bucket_size, n, q));
  for (const Range& col : gather_cols_) gather_floor_.push_back(layout_.column_floor(col));
  auto widest = [](const std::vector<Range>& cols) {
    int64_t w = 0;
    for (const Range& c : cols) w = std::max(w, c.count);
    return w;
  };
  int64_t staging = 0;
  if (n > 1 && options_.reduce_scatter) {
    for (size_t c = 0; c < reduce_cols_.size(); ++c)
      if (reduce_base_[c] < 0) staging = std::max(staging, n * reduce_cols_[c].count);
  }
  if (n > 1 && options_.allgather_partitions) {
    // In the compute copy's width: 16-bit columns take half the floats.
    const int64_t es = half() ? 2 : 4;
    staging = std::max(staging, (n * widest(gather_cols_) * es + 3) / 4);
  }
  // A second slot only helps when there is a next bucket to fill.
  const size_t columns = std::max(options_.reduce_scatter ? reduce_cols_.size() : 0,
                                  options_.allgather_partitions ? gather_cols_.size() : 0);
  const int slots = options_.overlap_comm && columns > 1 ? 2 : 1;
  ZT_ASSIGN_OR_RETURN(pipe_, BucketPipeline::create(d, staging, slots));
  reset_micro_step();
  install_hooks();
  return Status();
}

// 16-bit: the model's compute copy (and stage 1's accumulator) moves into
// half_, which frees the model's buffers; stage 2 binds its own fp32
// backward buffer.
Status ShardedStrategy::make_half_copy() {
  model::Module& m = *model_;
  ZT_ASSIGN_OR_RETURN(
      half_, HalfComputeCopy::create(
                 {.model = &m, .dtype = options_.dtype, .accumulate_gradients = half_accumulates()},
                 params_));
  params_ = {};
  grads_ = {};
  if (!half_accumulates()) {
    // Past Ψ, a zeroed tail up to the padded slot space, so the last
    // bucket's reduce-scatter can run in place (in_place_base).
    const int64_t padded = std::max(numel_, layout_.slots() * world());
    ZT_ASSIGN_OR_RETURN(stage2_grads_,
                        device().allocate(static_cast<size_t>(padded) * sizeof(float),
                                          MemoryCategory::kBuffers, "fp32 backward gradients"));
    grads_ = stage2_grads_.tensor(DType::kFloat32, 0, static_cast<size_t>(numel_));
    grads_capacity_ = padded;
    m.set_gradients(grads_.ptr<float>());
  }
  return Status();
}

Status ShardedStrategy::ensure_step_gradients() {
  if (!owned_grads_.empty() || own_count_ == 0) return Status();
  ZT_ASSIGN_OR_RETURN(step_grads_, PartitionArray::allocate(device(), DType::kFloat32,
                                                            static_cast<size_t>(own_count_),
                                                            {.host = options_.offload_optimizer,
                                                             .pin = options_.pin_memory,
                                                             .category = MemoryCategory::kBuffers},
                                                            "fp32 gradients of the step"));
  owned_grads_ = step_grads_.tensor();
  return Status();
}

void ShardedStrategy::reset_micro_step() {
  pending_cols_ = reduce_cols_.size();
  next_final_group_ = model_->num_groups() - 1;
}

void ShardedStrategy::zero_gradients() {
  if (half()) {
    Status s = half_->zero_gradients();
    if (s.ok() && !half_accumulates()) model_->zero_gradients();
    if (s.ok()) s = grad_part16_.fill_zero();
    ZT_CHECK(s.ok(), s.to_string());
    // The step's fp32 copy, or the 16-bit partition handed over as it is.
    if (step_grads_.size() > 0 || activations_lent_ || owned_grads_.dtype != DType::kFloat32) {
      step_grads_ = PartitionArray();
      owned_grads_ = {};
    }
    if (std::exchange(activations_lent_, false)) model_->return_activation_memory();
  } else {
    model_->zero_gradients();
  }
  if (separate_grads_) {
    const Status s = fill_zero(owned_grads_);
    ZT_CHECK(s.ok(), s.to_string());
  }
}

// The owned partition's persistent buffers (master if separate, states,
// the optimizer's gradient partition), wherever they live.
ModelStateBytes ShardedStrategy::owned_bytes() const {
  ModelStateBytes b;
  if (separate_master_) b.master_weights = static_cast<int64_t>(master_.size_bytes());
  for (const Tensor& st : state_tensors_)
    b.optimizer_states += static_cast<int64_t>(st.size_bytes());
  if (grad_part16_.size() > 0)
    b.gradients = grad_part16_.size_bytes();
  else if (separate_grads_ && step_grads_.size() == 0)
    b.gradients = static_cast<int64_t>(owned_grads_.size_bytes());
  return b;
}

ModelStateBytes ShardedStrategy::model_state_bytes() const {
  ModelStateBytes b = options_.offload_optimizer ? ModelStateBytes{} : owned_bytes();
  b.buffers = pipe_.bytes();
  if (half()) {
    b.parameters = half_->parameters().size_bytes();
    b.gradients += half_->gradients().size_bytes();  // stage 1's accumulator
    b.buffers += half_->buffer_bytes() + static_cast<int64_t>(allreduce_staging_.bytes());
    if (!step_grads_.on_host()) b.buffers += step_grads_.size_bytes();
  } else {
    b.parameters = static_cast<int64_t>(params_.size_bytes());
    if (stage() == 1) b.gradients = static_cast<int64_t>(grads_.size_bytes());
  }
  // Stage 2 only stages the backward's gradients in the full buffer.
  if (stage() == 2) b.buffers += static_cast<int64_t>(grads_.size_bytes());
  return b;
}

ModelStateBytes ShardedStrategy::host_model_state_bytes() const {
  if (!options_.offload_optimizer) return {};
  ModelStateBytes b = owned_bytes();
  if (step_grads_.on_host()) b.buffers += step_grads_.size_bytes();
  return b;
}

}  // namespace zerotrain::zero
