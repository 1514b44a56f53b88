// ShardedStrategy: what ZeRO stages 1 and 2 share (DeepSpeed's
// runtime/zero/stage_1_and_2.py); the
// stages themselves are Stage1Strategy and Stage2Strategy
// (stage1_strategy.h, stage2_strategy.h), which differ only in when
// gradients are reduced and where they accumulate.
//
// Each rank owns ~Ψ/N elements of the flat parameter buffer
// (zero::ShardLayout): a chunk of every contiguous reduce_bucket_size
// bucket, so buckets become final in backward order (fp32 stage 1: one
// contiguous shard [r·P, (r+1)·P), so the model's own slice is the master
// and holds the reduced gradients). The rank keeps the fp32 master weights
// (a copy unless fp32 with one contiguous slice) and the optimizer states
// for its real elements only, in "slot" order (owned_ranges()).
// After the optimizer step the owned master, rounded to the model dtype, is
// all-gathered in that dtype (16 bits for bf16/fp16) into every rank's
// compute copy in allgather_bucket_size slices of the owned arrays
// (allgather_partitions false: one broadcast series from each owner).
// reduce_scatter false: all-reduce in buckets, keep the own elements.
// The reduction follows reduction_policy (options.h) in grad_wire (fp32,
// or 16 bits narrowed in place in the bucket's fp32 array and widened
// back).
// overlap_comm: the reduce-scatter and all-gather buckets go through two
// staging slots (bucket_pipeline.h); buckets launched from the backward
// hooks run on the Communicator's thread while backward goes on and are
// awaited before the next micro-step's reduction can reuse their slot and
// at the end of after_backward. The parameter all-gather goes on under the
// next forward: publish_parameters() launches two columns and returns, and
// the forward hooks keep two in flight, each stage waiting only for the
// columns below its groups' end (the last stage for all). Same floats,
// same bytes as inline (the layout never depends on overlap_comm or
// offload). Collectives the caller issues between step() and forward come
// after those two columns on every rank (same Communicator, same order).
// reduce_scatter false and allgather_partitions false stay inline.
// offload_optimizer (device cpu): the fp32 master partition (a separate
// copy also for fp32), the optimizer states and the fp32 gradient
// partition the optimizer reads live in host memory (pinned if
// pin_memory). The fused AdamW runs there; publish rounds the updated
// master into the compute copy and gathers as without offload.
//
// bf16/fp16: the model's compute copy is a 16-bit [Ψ] array
// (half_compute.h; the model's own fp32 buffers are freed and each stage
// computes from fp32 expansions of the groups it reads), as DeepSpeed's
// 16-bit model. The engine's fp32 view of the gradients is then transient,
// boundary step only (as stage 3's).
//
// Memory (model_state_bytes, device), |own| ≈ Ψ/N:
//   fp32:      parameters 4Ψ (the model's buffer; its own slice is the
//              master, except at stage 2 over several buckets: + 4·|own|);
//              gradients 4Ψ (stage 1, the model's buffer) or 4·|own|
//              (stage 2); states 4·K·|own|: 8Ψ + 8Ψ/N (stage 1),
//              4Ψ + 12Ψ/N or 4Ψ + 16Ψ/N (stage 2) for Adam.
//   bf16/fp16: parameters 2Ψ; gradients 2Ψ (stage 1) or 2·|own| (stage
//              2); master 4·|own|; states 4·K·|own|: DeepSpeed's
//              4Ψ + 12Ψ/N and 2Ψ + 14Ψ/N for Adam.
//   buffers: the bucket staging N·S floats per slot (2 slots with
//   overlap_comm when there is more than one bucket); stage 2's fp32 [Ψ]
//   backward buffer; for 16-bit the pool of expanded groups and gradient
//   buffers and the transient fp32 gradient slice.
// offload_optimizer moves master, states and the optimizer's gradient
// partition (fp32 for stage 1, the 16-bit accumulator for stage 2) to
// host_model_state_bytes.
//
// create() broadcasts rank 0's weights first (as stage 0) and installs the
// model's hooks (replacing any). Thread-safety: as ZeroStrategy.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "device/device.h"
#include "model/module.h"
#include "zero/bucket_pipeline.h"
#include "zero/half_compute.h"
#include "zero/options.h"
#include "zero/partition_array.h"
#include "zero/shard_layout.h"
#include "zero/zero_strategy.h"

namespace zerotrain::zero {

class ShardedStrategy : public ZeroStrategy {
 public:
  ~ShardedStrategy() override;  // removes the hooks it installed

  Tensor owned_gradients() override { return owned_grads_; }
  Tensor owned_master() override { return master_; }
  std::span<const Tensor> optimizer_states() override { return state_tensors_; }
  Status publish_parameters() override;
  void zero_gradients() override;
  // Local: every rank holds the whole compute copy.
  Status gather_full_parameters(std::span<float> out) override;
  Status wait_communication() override { return finish_gathers(); }
  ModelStateBytes model_state_bytes() const override;
  ModelStateBytes host_model_state_bytes() const override;

  const ShardLayout& layout() const { return layout_; }
  int64_t owned_count() const { return own_count_; }  // this rank's real elements
  std::vector<Range> owned_ranges() const override { return layout_.owned_ranges(rank()); }
  // Buckets reduced from inside the backward's hooks, all micro-steps
  // (stage 1: boundary micro-steps only).
  int64_t hook_flushed_columns() const { return hook_flushed_; }
  // overlap_comm: all-gather columns that were still on the wire when
  // publish_parameters() returned and completed in the next forward.
  int64_t forward_gathered_columns() const { return forward_gathered_; }
  // Reduce columns that reduce-scatter in place in the gradient buffer
  // (stage 2, in_place_base), and the staging the pipeline holds.
  size_t reduce_column_count() const { return reduce_cols_.size(); }
  int64_t in_place_reduce_columns() const {
    return std::count_if(reduce_base_.begin(), reduce_base_.end(),
                         [](int64_t b) { return b >= 0; });
  }
  int64_t staging_bytes() const { return pipe_.bytes(); }

 protected:
  ShardedStrategy(model::Module* model, comm::Communicator* comm, const StrategyOptions& o)
      : model_(model), comm_(comm), options_(o) {}
  // The construction both stages share: broadcast, layout with ownership
  // buckets of owner_bucket elements, owned arrays, the 16-bit copy, the
  // bucket columns, the pipeline and the hooks. InvalidArgument for a model
  // without flat buffers or bucket sizes < 1; comm errors otherwise.
  Status init(int64_t owner_bucket);
  bool gradients_partitioned() const override { return true; }
  comm::Communicator& communicator() const override { return *comm_; }

  // ---- What the stages supply ----
  // Where the optimizer's gradients live (owned_grads_, grad_part16_),
  // given whether this rank owns one contiguous slice starting at flat
  // `own_offset`.
  virtual Status allocate_gradients(bool contiguous, int64_t own_offset) = 0;
  // 16-bit: whether the compute copy keeps a [Ψ] 16-bit accumulator
  // (stage 1) or the stage binds its own fp32 backward buffer (stage 2).
  virtual bool half_accumulates() const = 0;
  // The reduced chunk `mine` (fp32, device) of slot range `col` into the
  // owned gradients: stage 1 stores, stage 2 adds.
  virtual Status take_reduced(Range col, ConstTensor mine) = 0;
  // Where column col's chunks lie back to back in the gradient buffer (an
  // in-place reduce-scatter), or -1 (stage 1: always -1).
  virtual int64_t in_place_base(Range col) const { return -1; }

  // ---- Shared machinery (sharded_reduce.cc) ----
  // Reduction of column c (slot range reduce_cols_[c], one bucket's) of the
  // model's gradients into the owned gradients, through the pipeline.
  Status reduce_column(size_t c);
  Status reduce_pending_columns();  // pending_cols_ .. 0, then the pipeline drained
  Status allreduce_buckets();       // reduce_scatter: false
  // flat [src.offset, src.end()) of this micro-step's full gradients (the
  // model's fp32 buffer, or stage 1's 16-bit accumulator) as fp32, into out.
  Status read_gradients(Range src, Tensor out) const;
  // 16-bit: the transient fp32 own gradients exist from the first reduced
  // bucket to zero_gradients().
  Status ensure_step_gradients();
  // An owned-partition fp32 buffer of |own| elements: host with offload.
  StatusOr<Tensor> allocate_owned(const char* what, device::MemoryCategory category);
  bool half() const { return half_ != nullptr; }
  int world() const { return comm_->world_size(); }
  int rank() const { return comm_->rank(); }
  void reset_micro_step();
  Status finish_gathers();
  device::Device& device() const { return model_->device(); }

  model::Module* model_;
  comm::Communicator* comm_;
  StrategyOptions options_;
  int64_t numel_ = 0, own_count_ = 0;
  ShardLayout layout_;
  std::vector<SlotRun> own_runs_;  // this rank's elements, flat <-> slots
  // The model's flat fp32 buffers [Ψ] (device); for 16-bit, params_ is
  // empty (the compute copy is half_'s) and grads_ is stage 2's staging
  // buffer (or empty at stage 1).
  Tensor params_, grads_;
  std::unique_ptr<HalfComputeCopy> half_;  // bf16/fp16 only
  PartitionArray grad_part16_;             // 16-bit stage 2: the accumulator [|own|]
  PartitionArray step_grads_;              // 16-bit: the transient fp32 own gradients
  // 16-bit stage 2: owned_grads_ is in the model's lent activation memory
  // (the boundary step's transient, after the backward) instead of step_grads_.
  bool activations_lent_ = false;
  device::Buffer allreduce_staging_;   // 16-bit stage 1, reduce_scatter false
  std::vector<PartitionArray> owned_;  // owned partition arrays (device or host)
  BucketPipeline pipe_;
  // owned_grads_: [|own|] fp32 (the engine's); with an optimizer that
  // reads 16-bit gradients, 16-bit stage 2's grad_part16_ itself and
  // 16-bit stage 1's [Ψ] accumulator at one rank.
  Tensor master_, owned_grads_;
  bool separate_master_ = false, separate_grads_ = false;
  std::vector<Tensor> state_tensors_;
  std::vector<Range> reduce_cols_, gather_cols_;  // slot ranges
  std::vector<int64_t> reduce_floor_;             // column_floor of each reduce column
  std::vector<int64_t> reduce_base_;              // in_place_base of each reduce column
  int64_t grads_capacity_ = 0;  // floats at grads_.data: Ψ, or stage 2's padded buffer
  // This micro-step: columns [0, pending_cols_) not yet reduced; the next
  // group expected final (backward runs L+1 .. 0).
  size_t pending_cols_ = 0;
  int next_final_group_ = -1;
  bool reducing_pass_ = false;  // this backward's hooks reduce (stage 2, stage 1 boundary)
  int64_t hook_flushed_ = 0;

 private:
  Status make_half_copy();
  ModelStateBytes owned_bytes() const;
  Status on_group_final(int group);
  void install_hooks();
  // The parameter all-gather (sharded_gather.cc).
  Status gather_columns();
  // Rounds the own slots of gather column gather_next_ into a staging slot
  // and launches its all-gather (completing the slot's previous column).
  Status launch_gather();
  // overlap_comm: every column holding flat elements below flat_end has
  // landed in the compute copy (launching the next ones as slots free).
  Status await_gathers(int64_t flat_end);
  // Launches what the freed slots allow without blocking.
  Status pump_gathers();
  Status broadcast_shards();
  // The compute copy's elements [flat, flat + count) (16-bit, or fp32).
  Tensor compute_slice(int64_t flat, int64_t count) const;

  std::vector<int64_t> gather_floor_;  // column_floor of each gather column
  // overlap_comm: the all-gather after the step runs under the next
  // forward; columns [0, gather_done_) have landed, [.., gather_next_)
  // were launched.
  bool gather_in_forward_ = false, gathers_pending_ = false;
  size_t gather_next_ = 0, gather_done_ = 0;
  int64_t forward_gathered_ = 0;
  bool hooks_installed_ = false;
  device::Buffer stage2_grads_;  // 16-bit stage 2: grads_'s memory
};

}  // namespace zerotrain::zero
