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
  const auto own = static_cast<size_t>(s->own_.offset), count = static_cast<size_t>(s->own_.count);
  if (o.dtype == config::DType::kFp32) {
    s->master_ = s->params_.subspan(own, count);
  } else {
    ZT_ASSIGN_OR_RETURN(s->own_master_, zeroed(s->own_.count));
    s->master_ = s->own_master_.span();
    if (count > 0) std::memcpy(s->master_.data(), s->params_.data() + own, count * sizeof(float));
    // Every rank holds the same broadcast weights: round them locally.
    round_to(o.dtype, s->params_, s->params_);
  }
  for (int i = 0; i < o.state_count; ++i) {
    ZT_ASSIGN_OR_RETURN(tensor::AlignedBuffer<float> b, zeroed(s->own_.count));
    s->states_.push_back(std::move(b));
    s->state_spans_.push_back(s->states_.back().span());
  }
  if (o.stage == 2) {
    ZT_ASSIGN_OR_RETURN(s->grad_part_, zeroed(s->own_.count));
    s->owned_grads_ = s->grad_part_.span();
  } else {
    s->owned_grads_ = s->grads_.subspan(own, count);
  }
  s->reduce_cols_ = bucket_columns(s->shard_, bucket_shard(o.reduce_bucket_size, n, s->shard_));
  s->gather_cols_ = bucket_columns(s->shard_, bucket_shard(o.allgather_bucket_size, n, s->shard_));
  int64_t staging = 0;
  if (n > 1 && o.reduce_scatter && !s->reduce_cols_.empty())
    staging = n * s->reduce_cols_.front().count;
  if (n > 1 && o.allgather_partitions && !s->gather_cols_.empty())
    staging = std::max(staging, n * s->gather_cols_.front().count);
  ZT_ASSIGN_OR_RETURN(s->staging_, zeroed(staging));
  s->reset_micro_step();
  if (o.stage == 2) s->install_hooks();
  return s;
}

Status ShardedStrategy::publish_parameters() {
  if (world() == 1) {
    if (master_.data() != params_.data()) round_to(options_.dtype, master_, params_);
    return Status();
  }
  return options_.allgather_partitions ? gather_columns() : broadcast_shards();
}

// Column by column: own piece (rounded) into chunk `rank` of the staging,
// all-gather in place, then every chunk's real elements into the model.
Status ShardedStrategy::gather_columns() {
  const int n = world();
  for (const Range& col : gather_cols_) {
    const auto cc = static_cast<size_t>(col.count);
    std::span<float> all = staging_.span().subspan(0, n * cc);
    std::span<float> mine = all.subspan(rank() * cc, cc);
    const Range own = intersect(col, {0, own_.count});  // shard-relative
    round_to(options_.dtype, master_.subspan(own.offset, own.count), mine.subspan(0, own.count));
    std::fill(mine.begin() + own.count, mine.end(), 0.0f);
    ZT_RETURN_IF_ERROR(options_.comm->allgather(std::span<const float>(mine), all));
    for (int r = 0; r < n; ++r) {
      const Range dst = column_piece(numel_, n, r, col);
      if (dst.count > 0)
        std::memcpy(params_.data() + dst.offset, all.data() + r * cc, dst.count * sizeof(float));
    }
  }
  return Status();
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
  if (!grad_part_.span().empty())
    std::fill(grad_part_.span().begin(), grad_part_.span().end(), 0.0f);
}

ModelStateBytes ShardedStrategy::model_state_bytes() const {
  ModelStateBytes b;
  b.parameters = static_cast<int64_t>(params_.size_bytes());
  b.master_weights = static_cast<int64_t>(own_master_.size_bytes());
  for (const auto& s : states_) b.optimizer_states += static_cast<int64_t>(s.size_bytes());
  b.buffers = static_cast<int64_t>(staging_.size_bytes());
  if (options_.stage == 2) {
    b.gradients = static_cast<int64_t>(grad_part_.size_bytes());
    b.buffers += static_cast<int64_t>(grads_.size_bytes());
  } else {
    b.gradients = static_cast<int64_t>(grads_.size_bytes());
  }
  return b;
}

}  // namespace zerotrain::zero
