// ZeRO stages 1-2: construction, the parameter all-gather, memory (see
// sharded_strategy.h); the gradient reduction is in sharded_reduce.cc.
#include "zero/sharded_strategy.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>

#include "tensor/convert.h"
#include "tensor/half.h"

namespace zerotrain::zero {
namespace {

StatusOr<tensor::AlignedBuffer<float>> zeroed(int64_t n) {
  if (n <= 0) return tensor::AlignedBuffer<float>();
  return tensor::AlignedBuffer<float>::allocate(static_cast<size_t>(n));
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

template <typename Half16, void (*kDown)(std::span<const float>, std::span<Half16>),
          void (*kUp)(std::span<const Half16>, std::span<float>)>
void round_blocks(std::span<const float> in, std::span<float> out) {
  constexpr size_t kBlock = 4096;
  std::array<Half16, kBlock> tmp;
  for (size_t b = 0; b < in.size(); b += kBlock) {
    const size_t len = std::min(kBlock, in.size() - b);
    kDown(in.subspan(b, len), std::span<Half16>(tmp.data(), len));
    kUp(std::span<const Half16>(tmp.data(), len), out.subspan(b, len));
  }
}

}  // namespace

void round_to(config::DType dtype, std::span<const float> in, std::span<float> out) {
  ZT_CHECK(in.size() == out.size(), "round_to: ", in.size(), " vs ", out.size(), " elements");
  switch (dtype) {
    case config::DType::kFp32:
      if (in.data() != out.data() && !in.empty())
        std::memmove(out.data(), in.data(), in.size_bytes());
      return;
    case config::DType::kBf16:
      round_blocks<tensor::BFloat16, tensor::fp32_to_bf16, tensor::bf16_to_fp32>(in, out);
      return;
    case config::DType::kFp16:
      round_blocks<tensor::Half, tensor::fp32_to_fp16, tensor::fp16_to_fp32>(in, out);
      return;
  }
}

// One owned-partition buffer of |own| floats, zeroed: on the host (pinned
// if asked) with offload, else in compute memory.
Status ShardedStrategy::allocate_owned() {
  const auto count = static_cast<size_t>(own_.count);
  auto owned = [&]() -> StatusOr<std::span<float>> {
    if (options_.offload_optimizer) {
      ZT_ASSIGN_OR_RETURN(HostBuffer<float> b,
                          HostBuffer<float>::allocate(count, options_.pin_memory));
      host_owned_.push_back(std::move(b));
      return host_owned_.back().span();
    }
    ZT_ASSIGN_OR_RETURN(tensor::AlignedBuffer<float> b, zeroed(own_.count));
    device_owned_.push_back(std::move(b));
    return device_owned_.back().span();
  };
  const auto own = static_cast<size_t>(own_.offset);
  // fp32 without offload: the model's own slice IS the master.
  separate_master_ = options_.dtype != config::DType::kFp32 || options_.offload_optimizer;
  if (separate_master_) {
    ZT_ASSIGN_OR_RETURN(master_, owned());
    if (count > 0) std::memcpy(master_.data(), params_.data() + own, count * sizeof(float));
  } else {
    master_ = params_.subspan(own, count);
  }
  for (int i = 0; i < options_.state_count; ++i) {
    ZT_ASSIGN_OR_RETURN(std::span<float> st, owned());
    state_spans_.push_back(st);
  }
  // Stage 1 reduces into the model's own slice unless the optimizer's
  // gradients must be on the host; stage 2 always accumulates apart.
  separate_grads_ = options_.stage == 2 || options_.offload_optimizer;
  if (separate_grads_) {
    ZT_ASSIGN_OR_RETURN(owned_grads_, owned());
  } else {
    owned_grads_ = grads_.subspan(own, count);
  }
  return Status();
}

StatusOr<std::unique_ptr<ShardedStrategy>> ShardedStrategy::create(const ShardedOptions& o) {
  ZT_RETURN_IF_ERROR(validate(o));
  std::unique_ptr<ShardedStrategy> s(new ShardedStrategy(o));
  const int n = o.comm->world_size();
  s->numel_ = o.model->layout().total_numel();
  s->shard_ = shard_size(s->numel_, n);
  s->own_ = rank_range(s->numel_, n, o.comm->rank());
  s->params_ = {o.model->parameters(), static_cast<size_t>(s->numel_)};
  s->grads_ = {o.model->gradients(), static_cast<size_t>(s->numel_)};
  if (n > 1) ZT_RETURN_IF_ERROR(o.comm->broadcast(s->params_, 0));
  ZT_RETURN_IF_ERROR(s->allocate_owned());
  // Every rank holds the same broadcast weights: round them locally.
  if (o.dtype != config::DType::kFp32) round_to(o.dtype, s->params_, s->params_);
  s->reduce_cols_ = bucket_columns(s->shard_, bucket_shard(o.reduce_bucket_size, n, s->shard_));
  s->gather_cols_ = bucket_columns(s->shard_, bucket_shard(o.allgather_bucket_size, n, s->shard_));
  int64_t staging = 0;
  if (n > 1 && o.reduce_scatter && !s->reduce_cols_.empty())
    staging = n * s->reduce_cols_.front().count;
  if (n > 1 && o.allgather_partitions && !s->gather_cols_.empty())
    staging = std::max(staging, n * s->gather_cols_.front().count);
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
  if (world() == 1) {
    if (master_.data() != params_.data()) round_to(options_.dtype, master_, params_);
    return Status();
  }
  return options_.allgather_partitions ? gather_columns() : broadcast_shards();
}

// Column by column: own piece (rounded) into chunk `rank` of a staging
// slot, all-gather in place, then every chunk's real elements into the
// model. With two slots the next column is rounded while one is gathered.
Status ShardedStrategy::gather_columns() {
  const int n = world();
  for (const Range& col : gather_cols_) {
    const auto cc = static_cast<size_t>(col.count);
    ZT_ASSIGN_OR_RETURN(std::span<float> slot, pipe_.next_slot());
    std::span<float> all = slot.subspan(0, n * cc);
    std::span<float> mine = all.subspan(rank() * cc, cc);
    const Range own = intersect(col, {0, own_.count});  // shard-relative
    round_to(options_.dtype, master_.subspan(own.offset, own.count), mine.subspan(0, own.count));
    std::fill(mine.begin() + own.count, mine.end(), 0.0f);
    comm::WorkPtr w = options_.comm->allgather_async(std::as_bytes(mine), std::as_writable_bytes(all));
    ZT_RETURN_IF_ERROR(pipe_.submit(std::move(w), [this, n, col, all, cc] {
      for (int r = 0; r < n; ++r) {
        const Range dst = column_piece(numel_, n, r, col);
        if (dst.count > 0)
          std::memcpy(params_.data() + dst.offset, all.data() + r * cc, dst.count * sizeof(float));
      }
      return Status();
    }));
  }
  return pipe_.drain();
}

// DeepSpeed's allgather_partitions = false: each owner broadcasts its
// slice of the model buffer, in allgather_bucket_size pieces.
Status ShardedStrategy::broadcast_shards() {
  if (master_.data() != params_.data() + own_.offset)
    round_to(options_.dtype, master_, params_.subspan(own_.offset, own_.count));
  for (int r = 0; r < world(); ++r) {
    for (const Range& b :
         contiguous_buckets(rank_range(numel_, world(), r), options_.allgather_bucket_size))
      ZT_RETURN_IF_ERROR(options_.comm->broadcast(params_.subspan(b.offset, b.count), r));
  }
  return Status();
}

void ShardedStrategy::zero_gradients() {
  options_.model->zero_gradients();
  reduced_in_backward_ = false;
  if (separate_grads_) std::fill(owned_grads_.begin(), owned_grads_.end(), 0.0f);
}

// The owned partition's buffers (master if separate, states, gradient
// partition if separate), wherever they live.
ModelStateBytes ShardedStrategy::owned_bytes() const {
  ModelStateBytes b;
  if (separate_master_) b.master_weights = static_cast<int64_t>(master_.size_bytes());
  for (std::span<float> st : state_spans_) b.optimizer_states += static_cast<int64_t>(st.size_bytes());
  if (separate_grads_) b.gradients = static_cast<int64_t>(owned_grads_.size_bytes());
  return b;
}

ModelStateBytes ShardedStrategy::model_state_bytes() const {
  ModelStateBytes b = options_.offload_optimizer ? ModelStateBytes{} : owned_bytes();
  b.parameters = static_cast<int64_t>(params_.size_bytes());
  b.buffers = pipe_.bytes();
  // Stage 1 accumulates in the model's buffer; stage 2 only stages there.
  if (options_.stage == 2)
    b.buffers += static_cast<int64_t>(grads_.size_bytes());
  else
    b.gradients = static_cast<int64_t>(grads_.size_bytes());
  return b;
}

ModelStateBytes ShardedStrategy::host_model_state_bytes() const {
  return options_.offload_optimizer ? owned_bytes() : ModelStateBytes{};
}

}  // namespace zerotrain::zero
