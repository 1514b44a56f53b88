// ZeRO stages 1-2: construction, the parameter all-gather, memory (see
// sharded_strategy.h); the gradient reduction is in sharded_reduce.cc.
#include "zero/sharded_strategy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

namespace zerotrain::zero {
namespace {

StatusOr<device::cpu::AlignedBuffer<float>> zeroed(int64_t n) {
  if (n <= 0) return device::cpu::AlignedBuffer<float>();
  return device::cpu::AlignedBuffer<float>::allocate(static_cast<size_t>(n));
}

Status validate(const ShardedOptions& o) {
  if (o.model == nullptr || o.comm == nullptr)
    return invalid_argument("ShardedStrategy: model and comm are required");
  if (o.model->parameters() == nullptr || o.model->gradients() == nullptr)
    return invalid_argument(
        "ShardedStrategy: the model needs flat parameter and gradient buffers "
        "(GptModelOptions own_parameters/own_gradients, or set_parameters/set_gradients)");
  if (o.stage != 1 && o.stage != 2)
    return invalid_argument("ShardedStrategy: stage must be 1 or 2, got " +
                            std::to_string(o.stage));
  if (o.state_count < 0) return invalid_argument("ShardedStrategy: state_count < 0");
  if (o.reduce_bucket_size < 1)
    return invalid_argument("zero_optimization.reduce_bucket_size: must be >= 1, got " +
                            std::to_string(o.reduce_bucket_size));
  if (o.allgather_bucket_size < 1)
    return invalid_argument("zero_optimization.allgather_bucket_size: must be >= 1, got " +
                            std::to_string(o.allgather_bucket_size));
  if (!(o.predivide_factor > 0) || !std::isfinite(o.predivide_factor))
    return invalid_argument("gradient_predivide_factor: must be a positive number, got " +
                            std::to_string(o.predivide_factor));
  return Status();
}

// Elements of one ownership bucket (shard_layout.h): reduce_bucket_size, so
// the reduce buckets are contiguous and become final in backward order,
// except at fp32 stage 1, which keeps one contiguous shard so the model's
// own slice doubles as the master and the reduced gradients (it reduces
// once a step, at the boundary). fp32 stage 2 pays a separate master
// (4Ψ/N, as DeepSpeed's fp32 layout) for reductions that overlap
// backward. The layout depends on the stage and dtype only, so offload and
// overlap_comm never change which rank sums what: same floats.
int64_t ownership_bucket(const ShardedOptions& o, int64_t numel, int world) {
  const bool whole = o.dtype == DType::kFloat32 && o.stage == 1;
  return whole ? std::max<int64_t>(padded_numel(numel, world), 1) : o.reduce_bucket_size;
}

}  // namespace

// One owned-partition buffer of |own| floats, zeroed: on the host (pinned
// if asked) with offload, else in compute memory.
Status ShardedStrategy::allocate_owned() {
  const auto count = static_cast<size_t>(own_count_);
  auto owned = [&]() -> StatusOr<std::span<float>> {
    if (options_.offload_optimizer) {
      ZT_ASSIGN_OR_RETURN(device::cpu::HostBuffer<float> b,
                          device::cpu::HostBuffer<float>::allocate(count, options_.pin_memory));
      host_owned_.push_back(std::move(b));
      return host_owned_.back().span();
    }
    ZT_ASSIGN_OR_RETURN(device::cpu::AlignedBuffer<float> b, zeroed(own_count_));
    device_owned_.push_back(std::move(b));
    return device_owned_.back().span();
  };
  // fp32 without offload: the model's slice is the master when this rank
  // owns one contiguous range (stage 1, or one rank).
  const std::vector<Range> ranges = layout_.owned_ranges(rank());
  const bool contiguous = ranges.size() <= 1;
  const auto own = static_cast<size_t>(ranges.empty() ? 0 : ranges.front().offset);
  separate_master_ =
      options_.dtype != DType::kFloat32 || options_.offload_optimizer || !contiguous;
  if (separate_master_) {
    ZT_ASSIGN_OR_RETURN(master_, owned());
    for (const SlotRun& r : own_runs_)
      std::memcpy(master_.data() + r.slot, params_.data() + r.flat, r.count * sizeof(float));
  } else {
    master_ = params_.subspan(own, count);
  }
  for (int i = 0; i < options_.state_count; ++i) {
    ZT_ASSIGN_OR_RETURN(std::span<float> st, owned());
    state_spans_.push_back(st);
  }
  // fp32 stage 1 reduces into the model's own slice unless the
  // optimizer's gradients must be on the host (or the slice is not one
  // range); stage 2 always accumulates apart. 16-bit: stage 1's optimizer
  // gradients are transient unless offloaded; stage 2 accumulates in 16
  // bits (ensure_step_gradients).
  const bool half = options_.dtype != DType::kFloat32;
  separate_grads_ = options_.stage == 2 || options_.offload_optimizer || half || !contiguous;
  if (half && options_.stage == 2) {
    ZT_ASSIGN_OR_RETURN(grad_part16_,
                        PartitionArray::allocate(options_.dtype, count,
                                                 options_.offload_optimizer, options_.pin_memory));
  } else if (half && !options_.offload_optimizer) {
    owned_grads_ = {};  // stage 1: from the first reduced bucket on
  } else if (separate_grads_) {
    ZT_ASSIGN_OR_RETURN(owned_grads_, owned());
  } else {
    owned_grads_ = grads_.subspan(own, count);
  }
  return Status();
}

// 16-bit: the model's compute copy (and stage 1's accumulator) moves into
// half_, which frees the model's buffers; stage 2 binds its own fp32
// backward buffer.
Status ShardedStrategy::make_half_copy() {
  model::GptModel& m = *options_.model;
  ZT_ASSIGN_OR_RETURN(half_, HalfComputeCopy::create({.model = &m,
                                                      .dtype = options_.dtype,
                                                      .accumulate_gradients = options_.stage == 1},
                                                     params_));
  params_ = {};
  grads_ = {};
  if (options_.stage == 2) {
    // Past Ψ, a zeroed tail up to the padded slot space, so the last
    // bucket's reduce-scatter can run in place (in_place_base,
    // sharded_reduce.cc).
    const int64_t padded = std::max(numel_, layout_.slots() * world());
    ZT_ASSIGN_OR_RETURN(stage2_grads_, zeroed(padded));
    grads_ = stage2_grads_.span().subspan(0, static_cast<size_t>(numel_));
    grads_capacity_ = padded;
    m.set_gradients(grads_.data());
  }
  return Status();
}

Status ShardedStrategy::ensure_step_gradients() {
  if (!owned_grads_.empty() || own_count_ == 0) return Status();
  ZT_ASSIGN_OR_RETURN(step_grads_,
                      PartitionArray::allocate(DType::kFloat32,
                                               static_cast<size_t>(own_count_),
                                               options_.offload_optimizer, options_.pin_memory));
  owned_grads_ = step_grads_.f32();
  return Status();
}

StatusOr<std::unique_ptr<ShardedStrategy>> ShardedStrategy::create(const ShardedOptions& o) {
  ZT_RETURN_IF_ERROR(validate(o));
  std::unique_ptr<ShardedStrategy> s(new ShardedStrategy(o));
  const int n = o.comm->world_size();
  s->numel_ = o.model->layout().total_numel();
  s->layout_ = ShardLayout(s->numel_, n, ownership_bucket(o, s->numel_, n));
  s->own_count_ = s->layout_.owned_count(o.comm->rank());
  s->own_runs_ = s->layout_.runs(o.comm->rank(), {0, s->layout_.slots()});
  s->params_ = {o.model->parameters(), static_cast<size_t>(s->numel_)};
  s->grads_ = {o.model->gradients(), static_cast<size_t>(s->numel_)};
  s->grads_capacity_ = s->numel_;
  if (n > 1) ZT_RETURN_IF_ERROR(o.comm->broadcast(s->params_, 0));
  ZT_RETURN_IF_ERROR(s->allocate_owned());
  // Every rank holds the same broadcast weights: the 16-bit copy rounds
  // them locally.
  if (o.dtype != DType::kFloat32) ZT_RETURN_IF_ERROR(s->make_half_copy());
  const int64_t q = s->layout_.slots();
  s->reduce_cols_ = s->layout_.reduce_columns(bucket_shard(o.reduce_bucket_size, n, q));
  for (const Range& col : s->reduce_cols_) {
    s->reduce_floor_.push_back(s->layout_.column_floor(col));
    s->reduce_base_.push_back(s->in_place_base(col));
  }
  s->gather_cols_ = contiguous_buckets({0, q}, bucket_shard(o.allgather_bucket_size, n, q));
  for (const Range& col : s->gather_cols_)
    s->gather_floor_.push_back(s->layout_.column_floor(col));
  auto widest = [](const std::vector<Range>& cols) {
    int64_t w = 0;
    for (const Range& c : cols) w = std::max(w, c.count);
    return w;
  };
  int64_t staging = 0;
  if (n > 1 && o.reduce_scatter) {
    for (size_t c = 0; c < s->reduce_cols_.size(); ++c)
      if (s->reduce_base_[c] < 0) staging = std::max(staging, n * s->reduce_cols_[c].count);
  }
  if (n > 1 && o.allgather_partitions) {
    // In the compute copy's width: 16-bit columns take half the floats.
    const int64_t es = s->half() ? 2 : 4;
    staging = std::max(staging, (n * widest(s->gather_cols_) * es + 3) / 4);
  }
  // A second slot only helps when there is a next bucket to fill.
  const size_t columns = std::max(o.reduce_scatter ? s->reduce_cols_.size() : 0,
                                  o.allgather_partitions ? s->gather_cols_.size() : 0);
  const int slots = o.overlap_comm && columns > 1 ? 2 : 1;
  ZT_ASSIGN_OR_RETURN(s->pipe_, BucketPipeline::create(staging, slots));
  s->reset_micro_step();
  s->reducing_pass_ = o.stage == 2;
  s->install_hooks();
  return s;
}

Status ShardedStrategy::publish_parameters() {
  ZT_RETURN_IF_ERROR(finish_gathers());  // a forward-less step: the last ones first
  if (half()) ZT_RETURN_IF_ERROR(half_->release_all());  // expansions of the old weights
  if (world() == 1) {
    if (half())
      half_->parameters().write(0, master_);
    else if (master_.data() != params_.data())
      round_to(options_.dtype, master_, params_);
    return Status();
  }
  return options_.allgather_partitions ? gather_columns() : broadcast_shards();
}

// The compute copy's bytes at flat element i (16-bit, or fp32).
std::byte* ShardedStrategy::compute_at(int64_t i) {
  if (half()) return half_->parameters().at(static_cast<size_t>(i));
  return reinterpret_cast<std::byte*>(params_.data() + i);
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
  const size_t es = dtype_size(wire);
  const auto cc = static_cast<size_t>(col.count);
  ZT_ASSIGN_OR_RETURN(std::span<float> slot, pipe_.next_slot());
  // next_slot() completed the column that used this slot last.
  gather_done_ = std::max(gather_done_, gather_next_ + 1 - std::min<size_t>(
                                                              gather_next_ + 1, pipe_.slots()));
  std::span<std::byte> all = std::as_writable_bytes(slot).subspan(0, n * cc * es);
  std::span<std::byte> mine = all.subspan(rank() * cc * es, cc * es);
  const Range own = intersect(col, {0, own_count_});
  const auto oc = static_cast<size_t>(std::max<int64_t>(own.count, 0));
  if (oc > 0) from_fp32(wire, master_.data() + own.offset, oc, mine.data());
  std::fill(mine.begin() + static_cast<std::ptrdiff_t>(oc * es), mine.end(), std::byte{0});
  comm::WorkPtr w = options_.comm->allgather_async(mine, all);
  ++gather_next_;
  return pipe_.submit(std::move(w), [this, n, col, all, cc, es] {
    for (int r = 0; r < n; ++r)
      for (const SlotRun& run : layout_.runs(r, col))  // already rounded: exact
        std::memcpy(compute_at(run.flat), all.data() + (r * cc + run.slot - col.offset) * es,
                    static_cast<size_t>(run.count) * es);
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
    std::span<const float> m = master_.subspan(run.slot, run.count);
    if (half())
      half_->parameters().write(static_cast<size_t>(run.flat), m);
    else if (m.data() != params_.data() + run.flat)
      round_to(options_.dtype, m, params_.subspan(run.flat, run.count));
  }
  const size_t es = half() ? dtype_size(half_->parameters().dtype()) : sizeof(float);
  for (int r = 0; r < world(); ++r)
    for (const Range& owned : layout_.owned_ranges(r))
      for (const Range& b : contiguous_buckets(owned, options_.allgather_bucket_size))
        ZT_RETURN_IF_ERROR(options_.comm->broadcast(
            std::span<std::byte>(compute_at(b.offset), static_cast<size_t>(b.count) * es), r));
  return Status();
}

Status ShardedStrategy::gather_full_parameters(std::span<float> out) {
  if (out.size() != static_cast<size_t>(numel_))
    return invalid_argument("gather_full_parameters: needs " + std::to_string(numel_) +
                            " floats, got " + std::to_string(out.size()));
  ZT_RETURN_IF_ERROR(finish_gathers());
  if (half())
    half_->parameters().read(0, out.size(), out.data());
  else
    std::memcpy(out.data(), params_.data(), out.size_bytes());
  return Status();
}

void ShardedStrategy::zero_gradients() {
  reduced_in_backward_ = false;
  if (half()) {
    half_->zero_gradients();
    if (options_.stage == 2) options_.model->zero_gradients();
    grad_part16_.fill_zero();
    if (step_grads_.size() > 0 || activations_lent_) {
      step_grads_ = PartitionArray();
      owned_grads_ = {};
    }
    if (std::exchange(activations_lent_, false)) options_.model->return_activation_memory();
  } else {
    options_.model->zero_gradients();
  }
  if (separate_grads_) std::fill(owned_grads_.begin(), owned_grads_.end(), 0.0f);
}

// The owned partition's persistent buffers (master if separate, states,
// the optimizer's gradient partition), wherever they live.
ModelStateBytes ShardedStrategy::owned_bytes() const {
  ModelStateBytes b;
  if (separate_master_) b.master_weights = static_cast<int64_t>(master_.size_bytes());
  for (std::span<float> st : state_spans_) b.optimizer_states += static_cast<int64_t>(st.size_bytes());
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
    b.buffers += half_->buffer_bytes() + static_cast<int64_t>(allreduce_staging_.size_bytes());
    if (!step_grads_.on_host()) b.buffers += step_grads_.size_bytes();
  } else {
    b.parameters = static_cast<int64_t>(params_.size_bytes());
    if (options_.stage == 1) b.gradients = static_cast<int64_t>(grads_.size_bytes());
  }
  // Stage 2 only stages the backward's gradients in the full buffer.
  if (options_.stage == 2) b.buffers += static_cast<int64_t>(grads_.size_bytes());
  return b;
}

ModelStateBytes ShardedStrategy::host_model_state_bytes() const {
  if (!options_.offload_optimizer) return {};
  ModelStateBytes b = owned_bytes();
  if (step_grads_.on_host()) b.buffers += step_grads_.size_bytes();
  return b;
}

}  // namespace zerotrain::zero
