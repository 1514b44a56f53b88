// Stage3Strategy: ZeRO stage 3 (DeepSpeed's runtime/zero/stage3.py).
// Every group's parameters are partitioned over the N ranks
// (stage3_layout.h: per group, one all-gather of N equal chunks); a rank
// keeps only its owned elements of the compute parameters, the gradients,
// the fp32 master and the optimizer states. The model's own flat buffers
// are freed at create(); it computes from full fp32 group buffers that the
// hooks bind around each stage:
//   before_forward(s) / before_backward(s): the ParamCoordinator gathers
//     the groups stage s reads (s = L+1 also reads group 0, the tied wte),
//     bf16/fp16 partitions converted to fp32 on arrival, and prefetches the
//     next groups in pass order up to stage3_prefetch_bucket_size elements;
//     before_backward also binds a zeroed full gradient buffer to each
//     group stage s writes (group 0's from stage L+1 on).
//   after_forward(s) / after_backward(s): the coordinator releases what it
//     does not keep (stage3_max_reuse_distance; never more than
//     stage3_max_live_parameters elements gathered, see
//     param_coordinator.h). after_backward(s) makes group s's gradients
//     final (group 0 last of all): they are copied into reduce_bucket_size
//     column buckets, reduce-scattered (mean/sum, prescale, predivide as
//     stage 0) and added into the gradient partition, and the full buffer
//     is released.
// overlap_comm: gathers and reduce-scatters are async Work on the
// Communicator's thread — prefetches run while the current stage computes,
// up to two reduce-scatter buckets stay in flight while backward goes on
// (all land before the engine's after_backward returns). Without it every
// collective completes inline, in the same order: same floats, same bytes.
// stage3_param_persistence_threshold: tensors with fewer elements are kept
// whole on every rank (fp32 storage of their current, dtype-rounded
// weights, counted as parameters) and never gathered in the passes; their
// optimizer ownership, gradients and reduction stay partitioned like the
// rest, and publish_parameters() refreshes the whole copies with one
// all-gather of the persistent list per group.
//
// Storage per rank (|own| = owned real elements ≈ Ψ/N):
//   parameter partition |own| in the model dtype (bf16/fp16: 2 bytes);
//     for fp32 it IS the master (one array, no copy);
//   gradient partition |own| in the model dtype, accumulated over
//     micro-steps (fp32 needs 4 bytes; 16-bit keeps 2 + 2 + 4 + 8 = 16Ψ/N);
//   fp32 master |own| (bf16/fp16 only) and state_count fp32 states |own|.
//   For bf16/fp16 the engine's fp32 view of the gradients
//   (owned_gradients) is a transient |own| fp32 array that exists from
//   reduce_gradients() to zero_gradients() — the boundary step only; it is
//   reported under buffers while it exists.
//   Persistent whole copies (fp32) and the buffer pool (gathered groups,
//   full group gradients, staging; buffers) come on top.
// offload_param {device: cpu}: the parameter partition lives in host
// memory. offload_optimizer {device: cpu, pin_memory}: master, states,
// gradient partition (and the transient fp32 gradients) in host memory,
// pinned if asked (best effort, one warning). fp32's single
// parameter/master array is on the host when either is offloaded.
// model_state_bytes() reports what stays in device memory,
// host_model_state_bytes() the rest.
// sub_group_size: the engine runs the optimizer over the owned arrays in
// chunks of at most that many elements (optimizer_sub_group_size()).
// reduce_scatter, allgather_partitions, allgather_bucket_size and
// contiguous_gradients are stage 1-2 keys with no effect here (as in
// DeepSpeed's stage 3: it always reduce-scatters into partitions).
// LoRA (stage3_frozen.cc): each group's frozen base block (fp32 and 4-bit
// tensors, model/adapters.h) is partitioned too, ceil(bytes/4N) floats per
// rank (in host memory with offload_param), all-gathered into a pooled
// buffer with the group's parameters and bound with set_group_frozen; the
// coordinator counts a block's floats among the group's elements. A base
// the model loaded before create() is cut to this rank's chunks and freed;
// load_frozen() streams it into the chunks without a whole copy.
//
//   ZT_ASSIGN_OR_RETURN(auto s, Stage3Strategy::create(&model, comm, options));
//   s->coordinator().stats().live_high_water;     // instrumented peak of gathered elements
//
// create() broadcasts rank 0's weights first (as the other stages), keeps
// this rank's partition, frees the model's flat buffers and installs the
// hooks (replacing any); the destructor removes them. Thread-safety: as
// ZeroStrategy; the Communicator's thread runs the collectives.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "device/device.h"
#include "model/module.h"
#include "zero/buffer_pool.h"
#include "zero/options.h"
#include "zero/param_coordinator.h"
#include "zero/partition_array.h"
#include "zero/stage3_layout.h"
#include "zero/zero_strategy.h"

namespace zerotrain::zero {

class Stage3Strategy : public ZeroStrategy, private GatherBackend {
 public:
  // InvalidArgument for a model without flat buffers, bucket or sub-group
  // sizes < 1, negative stage3 sizes, a bad predivide factor, or a
  // max_live_parameters below one stage's groups; comm errors otherwise.
  static StatusOr<std::unique_ptr<Stage3Strategy>> create(model::Module* model,
                                                          comm::Communicator* comm,
                                                          const StrategyOptions& o);
  ~Stage3Strategy() override;

  int stage() const override { return 3; }
  Status after_backward(bool boundary) override;
  Status reduce_gradients() override;
  Tensor owned_gradients() override { return owned_grads_; }
  Tensor owned_master() override { return master_->tensor(); }
  std::span<const Tensor> optimizer_states() override { return state_tensors_; }
  Status publish_parameters() override;
  void zero_gradients() override;
  ModelStateBytes model_state_bytes() const override;
  ModelStateBytes host_model_state_bytes() const override;
  std::vector<Range> owned_ranges() const override { return layout_.owned_ranges(); }
  int64_t optimizer_sub_group_size() const override { return options_.sub_group_size; }
  Status gather_full_parameters(std::span<float> out) override;
  Status load_frozen(model::Module& m, const model::ReadFlatFn& read) override;
  int64_t frozen_bytes() const override;
  int64_t host_frozen_bytes() const override;

  const Stage3Layout& layout() const { return layout_; }
  const ParamCoordinator& coordinator() const { return coordinator_; }

 protected:
  bool gradients_partitioned() const override { return true; }
  comm::Communicator& communicator() const override { return *comm_; }

 private:
  struct GroupBuffers {
    device::Buffer params;   // [numel] fp32, bound while gathered
    device::Buffer grads;    // [numel] fp32, bound during its backward
    device::Buffer staging;  // the gather's N chunks, storage dtype
    comm::WorkPtr gather;
    device::Buffer frozen;   // the frozen block's N chunks, bound while gathered
    comm::WorkPtr frozen_gather;
  };
  struct PendingReduce {  // one reduce-scatter bucket in flight
    device::Buffer staging;
    comm::WorkPtr work;
    const CompactList* list = nullptr;
    Range col;  // chunk-relative compact range
  };
  Stage3Strategy(model::Module* model, comm::Communicator* comm, const StrategyOptions& o)
      : model_(model), comm_(comm), options_(o) {}
  int world() const { return comm_->world_size(); }
  int rank() const { return comm_->rank(); }
  device::Device& device() const { return model_->device(); }
  // Group g's full fp32 buffer as a tensor.
  Tensor group_tensor(int g, const device::Buffer& b) const;
  // Fills dst (count elements, fp32) with flat parameters [flat, flat + count).
  using PieceSource = std::function<Status(int64_t flat, int64_t count, Tensor dst)>;
  Status allocate(const PieceSource& source);
  void install_hooks();
  // GatherBackend.
  Status start_gather(int g) override;
  Status finish_gather(int g) override;
  void release(int g) override;
  // The group's gather into staging (own chunk packed, collective issued).
  Status issue_gather(int g, device::Buffer* staging, comm::WorkPtr* work);
  // Staging (arrived) -> a full fp32 group buffer (device or host),
  // persistent copies included.
  Status unpack_gather(int g, const device::Buffer* staging, Tensor dst);
  // Gradients (stage3_reduce.cc).
  Status on_before_backward(int s);
  Status on_after_backward(int s);
  Status reduce_group(int g);
  Status reduce_column(int g, const CompactList& list, Range col);
  Status finish_reduce(PendingReduce& p);
  Status drain_reduces();
  Status refresh_persistent();
  // The frozen base (stage3_frozen.cc).
  Status allocate_frozen();
  Tensor frozen_chunk(int g) const;
  // A block as floats, in device memory (on) or host memory (null).
  static ConstTensor frozen_floats(const uint8_t* block, int64_t bytes, device::Device* on);
  // This rank's chunk of group g's block, from either memory.
  Status keep_frozen_chunk(int g, ConstTensor block);
  Status issue_frozen_gather(int g, device::Buffer* all, comm::WorkPtr* work);
  Status finish_frozen_gather(int g);
  void release_frozen(int g);

  model::Module* model_;
  comm::Communicator* comm_;
  StrategyOptions options_;
  DType param_dtype_ = DType::kFloat32;
  Stage3Layout layout_;
  ParamCoordinator coordinator_;
  // Owned arrays. params_ is master_ itself for fp32.
  PartitionArray master_store_, param_store_, grads_;
  PartitionArray* master_ = &master_store_;
  PartitionArray* params_ = &master_store_;
  std::vector<PartitionArray> states_;
  std::vector<Tensor> state_tensors_;
  PartitionArray step_grads_;          // fp32 view for 16-bit gradients, boundary only
  Tensor owned_grads_;                 // what the engine reads: grads_ or step_grads_
  device::Buffer persistent_;          // [persistent_numel] fp32 whole copies
  std::vector<GroupBuffers> buffers_;  // [num_groups]
  PartitionArray frozen_part_;         // this rank's chunk of every frozen block
  std::vector<int64_t> frozen_at_, frozen_chunk_;  // [num_groups] its offset, floats
  BufferPool pool_;
  std::deque<PendingReduce> reduces_;
  bool hooks_installed_ = false;
};

}  // namespace zerotrain::zero
