// ShardedStrategy: ZeRO stages 1 and 2 (reference §3.1). Each rank owns
// ~Ψ/N elements of the flat parameter buffer (zero::ShardLayout): a chunk
// of every contiguous reduce_bucket_size bucket, so buckets become final
// in backward order (fp32 stage 1: one contiguous shard [r·P, (r+1)·P),
// so the model's own slice is the master and holds the reduced gradients).
// The rank keeps the fp32 master weights (a copy unless fp32 with one
// contiguous slice) and the optimizer states for its real elements only,
// in "slot" order (owned_ranges()).
//   stage 1: gradients accumulate in the model's full buffer; in the
//            boundary micro-step's backward they are reduce-scattered
//            bucket by bucket into the owned gradients, each bucket from
//            the hooks once its groups are final (as DeepSpeed's stage 1
//            does on the boundary), the rest at after_backward.
//   stage 2: every micro-step's gradients are reduce-scattered as backward
//            finalizes them (the model's after_backward(g) hook flushes
//            every bucket that lies in finalized groups) and added into a
//            partition-sized accumulator; the model's buffer is zeroed
//            after each micro-step and only stages.
// After the optimizer step the owned master, rounded to the model dtype, is
// all-gathered in that dtype (16 bits for bf16/fp16) into every rank's
// compute copy in allgather_bucket_size slices of the owned arrays
// (allgather_partitions false: one broadcast series from each owner).
// reduce_scatter false: all-reduce in buckets, keep the own elements.
// Mean/sum, prescale and predivide as stage 0 (DataParallelStrategy). The
// reductions run in grad_wire (fp32, or 16 bits narrowed in place in the
// bucket's fp32 array and widened back, grad_wire.h).
// overlap_comm: the reduce-scatter and all-gather buckets go through two
// staging slots (bucket_pipeline.h); stage 2's buckets, launched from the
// backward hooks, run on the Communicator's thread while backward goes on
// and are awaited before the next micro-step's reduction can reuse their
// slot and at the end of after_backward (stage 1: the boundary micro-step's
// buckets the same way). The parameter all-gather goes on under the next
// forward: publish_parameters() launches two columns and returns, and the
// forward hooks keep two in flight, each stage waiting only for the
// columns below its groups' end (the last stage for all). Same floats,
// same bytes as inline (the layout never depends on overlap_comm or
// offload). Collectives the caller issues between step() and forward come
// after those two columns on every rank (same Communicator, same order).
// reduce_scatter false and allgather_partitions false stay inline.
// offload_optimizer (device cpu): the fp32 master partition (a separate
// copy also for fp32), the optimizer states and the fp32 gradient
// partition the optimizer reads live in HostBuffers (pinned if
// pin_memory); stage 1 copies the reduced own elements there, stage 2
// accumulates there. The fused AdamW runs on them; publish rounds the
// updated master into the model buffer and gathers as without offload.
//
// bf16/fp16: the model's compute copy is a 16-bit [Ψ] array
// (half_compute.h; the model's own fp32 buffers are freed and each stage
// computes from fp32 expansions of the groups it reads), as DeepSpeed's
// 16-bit model. Stage 1 accumulates the micro-steps' gradients in a 16-bit
// [Ψ] array too (each group's fp32 gradients added, rounded, when final),
// reduce-scatters from it into a transient fp32 own slice; stage 2 keeps its fp32 [Ψ] staging
// buffer for the backward and accumulates the reduced partition in 16 bits. The engine's fp32 view
// of the gradients is then transient, boundary step only (as stage 3's); at stage 2 without offload
// it lives in the model's idle activation memory when that is large enough
// (GptModel::lend_activation_memory).
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
//   ShardedOptions o{.model = &m, .comm = c, .stage = 2, .state_count = 2};
//   ZT_ASSIGN_OR_RETURN(auto s, ShardedStrategy::create(o));
//
// create() broadcasts rank 0's weights first (as stage 0) and installs the
// model's hooks (replacing any) when reduce_scatter is on. Thread-safety: as ZeroStrategy.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "config/config.h"
#include "model/gpt_model.h"
#include "device/cpu/aligned_buffer.h"
#include "zero/bucket_pipeline.h"
#include "zero/half_compute.h"
#include "device/cpu/host_buffer.h"
#include "core/range.h"
#include "zero/partition_array.h"
#include "zero/shard_layout.h"
#include "zero/zero_strategy.h"

namespace zerotrain::zero {

struct ShardedOptions {
  model::GptModel* model = nullptr;  // flat parameter and gradient buffers bound
  comm::Communicator* comm = nullptr;
  int stage = 1;  // 1 or 2
  DType dtype = DType::kFloat32;
  int state_count = 2;
  config::AllreduceOp allreduce_op = config::AllreduceOp::kMean;
  bool prescale = false;
  double predivide_factor = 1.0;
  // The reductions' dtype (gradient_wire_dtype): 16-bit narrows each
  // bucket in place in the fp32 array it is reduced from (grad_wire.h).
  DType grad_wire = DType::kFloat32;
  int64_t reduce_bucket_size = 500'000'000;     // elements
  int64_t allgather_bucket_size = 500'000'000;  // elements
  bool reduce_scatter = true;
  bool allgather_partitions = true;
  bool overlap_comm = false;       // double-buffered async bucket collectives
  bool offload_optimizer = false;  // master, states, gradient partition on the host
  bool pin_memory = true;          // pin the offloaded buffers (best effort)
};

class ShardedStrategy : public ZeroStrategy {
 public:
  // InvalidArgument for a model without flat buffers, a stage other than
  // 1/2, bucket sizes < 1 or a bad predivide factor; comm errors otherwise.
  static StatusOr<std::unique_ptr<ShardedStrategy>> create(const ShardedOptions& o);
  ~ShardedStrategy() override;  // removes the hooks it installed

  int stage() const override { return options_.stage; }
  void before_backward(bool boundary) override;
  Status after_backward(bool boundary) override;
  Status reduce_gradients() override;
  bool gradients_partitioned() const override { return true; }
  std::span<float> owned_gradients() override { return owned_grads_; }
  std::span<float> owned_master() override { return master_; }
  std::span<const std::span<float>> optimizer_states() override { return state_spans_; }
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

 private:
  explicit ShardedStrategy(const ShardedOptions& o) : options_(o) {}
  int world() const { return options_.comm->world_size(); }
  int rank() const { return options_.comm->rank(); }
  // Reduction of column c (slot range reduce_cols_[c], one bucket's, see
  // shard_layout.h) of the model's gradients into the owned gradients
  // (stage 1: overwrite, stage 2: add), through the pipeline.
  Status reduce_column(size_t c);
  // Where column col's chunks lie back to back in the gradient buffer
  // (stage 2's in-place reduce-scatter), or -1 (sharded_reduce.cc).
  int64_t in_place_base(Range col) const;
  // The reduced chunk `mine` of slot range `col` into the owned gradients.
  Status take_reduced(Range col, std::span<float> mine);
  // flat [src.offset, src.end()) of this micro-step's full gradients
  // (the model's fp32 buffer, or stage 1's 16-bit accumulator) as fp32.
  void read_gradients(Range src, float* out) const;
  // 16-bit: the transient fp32 own gradients exist (stage 1 without
  // offload, stage 2) from the first reduced bucket to zero_gradients().
  Status ensure_step_gradients();
  bool half() const { return half_ != nullptr; }
  Status allocate_owned();
  Status make_half_copy();
  ModelStateBytes owned_bytes() const;
  Status allreduce_buckets();  // reduce_scatter: false
  Status on_group_final(int group);
  Status gather_columns();
  // Rounds the own slots of gather column gather_next_ into a staging slot
  // and launches its all-gather (completing the slot's previous column).
  Status launch_gather();
  // overlap_comm: every column holding flat elements below flat_end has
  // landed in the compute copy (launching the next ones as slots free).
  Status await_gathers(int64_t flat_end);
  // Launches what the freed slots allow without blocking.
  Status pump_gathers();
  // All of this step's gather columns landed (no-op when none pending).
  Status finish_gathers();
  std::byte* compute_at(int64_t i);  // the compute copy's element i
  Status broadcast_shards();
  void install_hooks();
  void reset_micro_step();

  ShardedOptions options_;
  int64_t numel_ = 0, own_count_ = 0;
  ShardLayout layout_;
  std::vector<SlotRun> own_runs_;  // this rank's elements, flat <-> slots
  // The model's flat fp32 buffers [Ψ]; for 16-bit, params_ is empty (the
  // compute copy is half_'s) and grads_ is stage 2's staging buffer.
  std::span<float> params_, grads_;
  std::unique_ptr<HalfComputeCopy> half_;      // bf16/fp16 only
  device::cpu::AlignedBuffer<float> stage2_grads_;  // 16-bit stage 2: grads_'s memory
  PartitionArray grad_part16_;                 // 16-bit stage 2: the accumulator [|own|]
  PartitionArray step_grads_;                  // 16-bit: the transient fp32 own gradients
  // 16-bit stage 2: owned_grads_ is in the model's lent activation memory
  // (the boundary step's transient, after the backward) instead of step_grads_.
  bool activations_lent_ = false;
  device::cpu::AlignedBuffer<float> allreduce_staging_;  // 16-bit stage 1, reduce_scatter false
  // Owned partition buffers: device (AlignedBuffer) or, with offload, host.
  std::vector<device::cpu::AlignedBuffer<float>> device_owned_;
  std::vector<device::cpu::HostBuffer<float>> host_owned_;
  BucketPipeline pipe_;
  std::span<float> master_, owned_grads_;  // owned_grads_: [|own|] fp32 (the engine's)
  bool separate_master_ = false, separate_grads_ = false;
  std::vector<std::span<float>> state_spans_;
  std::vector<Range> reduce_cols_, gather_cols_;  // slot ranges
  std::vector<int64_t> reduce_floor_;             // column_floor of each reduce column
  std::vector<int64_t> reduce_base_;              // in_place_base of each reduce column
  int64_t grads_capacity_ = 0;         // floats at grads_.data(): Ψ, or stage 2's padded buffer
  std::vector<int64_t> gather_floor_;  // column_floor of each gather column
  // overlap_comm: the all-gather after the step runs under the next
  // forward; columns [0, gather_done_) have landed, [.., gather_next_)
  // were launched.
  bool gather_in_forward_ = false, gathers_pending_ = false;
  size_t gather_next_ = 0, gather_done_ = 0;
  int64_t forward_gathered_ = 0;
  // This micro-step: columns [0, pending_cols_) not yet reduced;
  // the next group expected final (backward runs L+1 .. 0).
  size_t pending_cols_ = 0;
  int next_final_group_ = -1;
  bool hooks_installed_ = false;
  bool reducing_pass_ = false;        // this backward's hooks reduce (stage 2, stage 1 boundary)
  bool reduced_in_backward_ = false;  // stage 1: this boundary's reduction is done
  int64_t hook_flushed_ = 0;
};

}  // namespace zerotrain::zero
