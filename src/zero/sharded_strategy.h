// ShardedStrategy: ZeRO stages 1 and 2 (reference §3.1). The flat
// parameter buffer of Ψ elements is split into N shards of P = ceil(Ψ/N)
// (padded to N·P, see partition.h); rank r owns shard r and keeps the fp32
// master weights (bf16/fp16; for fp32 the model's own slice IS the master)
// and the optimizer states for its real elements only.
//   stage 1: gradients accumulate in the model's full buffer; at the
//            boundary they are reduce-scattered in reduce_bucket_size
//            column buckets into the own slice of that buffer.
//   stage 2: every micro-step's gradients are reduce-scattered as backward
//            finalizes them (the model's after_backward(g) hook flushes
//            every bucket whose pieces all lie in finalized groups) and
//            added into a partition-sized fp32 accumulator; the model's
//            buffer is zeroed after each micro-step and only stages.
// After the optimizer step the own slice, rounded to the model dtype, is
// all-gathered into every rank's model buffer in allgather_bucket_size
// column buckets (allgather_partitions false: one broadcast series from
// each owner). reduce_scatter false: all-reduce in buckets, keep the own
// slice. Mean/sum, prescale and predivide as stage 0 (DataParallelStrategy).
// overlap_comm is not acted on: every bucket is reduced inline.
//
// Memory (model_state_bytes): parameters 4Ψ (fp32 storage, also for bf16
// values); gradients 4Ψ (stage 1) or 4·|own| (stage 2); master 4·|own|
// (16-bit only); states 4·K·|own|; buffers: the bucket staging N·S floats,
// plus the model's 4Ψ gradient buffer in stage 2.
//
//   ShardedOptions o{.model = &m, .comm = c, .stage = 2, .state_count = 2};
//   ZT_ASSIGN_OR_RETURN(auto s, ShardedStrategy::create(o));
//
// create() broadcasts rank 0's weights first (as stage 0) and installs the
// model's hooks in stage 2 (replacing any). Thread-safety: as ZeroStrategy.
#pragma once

#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "config/config.h"
#include "model/gpt_model.h"
#include "tensor/aligned_buffer.h"
#include "zero/partition.h"
#include "zero/zero_strategy.h"

namespace zerotrain::zero {

struct ShardedOptions {
  model::GptModel* model = nullptr;  // flat parameter and gradient buffers bound
  comm::Communicator* comm = nullptr;
  int stage = 1;  // 1 or 2
  config::DType dtype = config::DType::kFp32;
  int state_count = 2;
  config::AllreduceOp allreduce_op = config::AllreduceOp::kMean;
  bool prescale = false;
  double predivide_factor = 1.0;
  int64_t reduce_bucket_size = 500'000'000;     // elements
  int64_t allgather_bucket_size = 500'000'000;  // elements
  bool reduce_scatter = true;
  bool allgather_partitions = true;
};

class ShardedStrategy : public ZeroStrategy {
 public:
  // InvalidArgument for a model without flat buffers, a stage other than
  // 1/2, bucket sizes < 1 or a bad predivide factor; comm errors otherwise.
  static StatusOr<std::unique_ptr<ShardedStrategy>> create(const ShardedOptions& o);
  ~ShardedStrategy() override;  // removes the hooks it installed

  int stage() const override { return options_.stage; }
  Status after_backward(bool boundary) override;
  Status reduce_gradients() override;
  bool gradients_partitioned() const override { return true; }
  std::span<float> owned_gradients() override { return owned_grads_; }
  std::span<float> owned_master() override { return master_; }
  std::span<const std::span<float>> optimizer_states() override { return state_spans_; }
  Status publish_parameters() override;
  void zero_gradients() override;
  ModelStateBytes model_state_bytes() const override;

  Range own_range() const { return own_; }
  std::vector<Range> owned_ranges() const override { return {own_}; }
  int64_t shard() const { return shard_; }
  // Stage 2: buckets reduced from inside the backward's hooks, all micro-steps.
  int64_t hook_flushed_columns() const { return hook_flushed_; }

 private:
  explicit ShardedStrategy(const ShardedOptions& o) : options_(o) {}
  int world() const { return options_.comm->world_size(); }
  int rank() const { return options_.comm->rank(); }
  // Reduction of column `col` of the model's gradients into the owned
  // gradients (stage 1: overwrite, stage 2: add).
  Status reduce_column(Range col);
  Status reduce_all_columns();
  Status allreduce_buckets();  // reduce_scatter: false
  Status on_group_final(int group);
  Status gather_columns();
  Status broadcast_shards();
  void install_hooks();
  void reset_micro_step();

  ShardedOptions options_;
  int64_t numel_ = 0, shard_ = 0;
  Range own_;
  std::span<float> params_, grads_;  // the model's flat buffers [Ψ]
  tensor::AlignedBuffer<float> own_master_, grad_part_, staging_;
  std::span<float> master_, owned_grads_;
  std::vector<tensor::AlignedBuffer<float>> states_;
  std::vector<std::span<float>> state_spans_;
  std::vector<Range> reduce_cols_, gather_cols_;
  // Stage 2, this micro-step: columns [0, pending_cols_) not yet reduced;
  // the next group expected final (backward runs L+1 .. 0).
  size_t pending_cols_ = 0;
  int next_final_group_ = -1;
  bool hooks_installed_ = false;
  int64_t hook_flushed_ = 0;
};

// out = float(dtype(in)) (round to nearest even); a copy for fp32.
void round_to(config::DType dtype, std::span<const float> in, std::span<float> out);

}  // namespace zerotrain::zero
