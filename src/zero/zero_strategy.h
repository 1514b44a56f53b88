// ZeroStrategy: what a ZeRO stage owns and does for the Engine — where the
// fp32 master weights, the optimizer states and the reduced gradients live,
// how gradients are combined over ranks and how new weights reach the
// model. The Engine keeps the precision and step logic (loss scale,
// clipping, optimizer, scheduler) and drives a strategy through this
// interface only, so stages plug in without touching the step:
//
//   micro-step:  model backward into model grads -> after_backward(boundary)
//   boundary:    reduce_gradients() -> gradient_stats() (over all ranks)
//                -> [engine: overflow, clip] -> optimizer on
//                (owned_master, owned_gradients, states) -> publish_parameters()
//                -> zero_gradients()
//
// "Owned" is this rank's partition: everything for stage 0, a 1/N shard
// for stages 1-3 (its real elements only: padding is never owned). The
// owned tensors are in the device's memory, or in host memory when
// offloaded (Tensor::device says which; the engine runs the optimizer on
// that memory's Ops).
//
//   ZT_RETURN_IF_ERROR(s->reduce_gradients());
//   ZT_ASSIGN_OR_RETURN(GradientStats st, s->gradient_stats());
//   opt.update(s->owned_master(), s->owned_gradients(), s->optimizer_states(), {}, scale);
//   ZT_RETURN_IF_ERROR(s->publish_parameters());
//
// Thread-safety: one owner (the Engine); not synchronised.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "core/range.h"
#include "core/status.h"
#include "core/tensor.h"
#include "model/module.h"
#include "zero/memory_model.h"

namespace zerotrain::zero {

// The boundary step's gradient statistics, over every rank.
struct GradientStats {
  bool overflow = false;     // some gradient is inf or NaN
  double sum_squares = 0.0;  // Σ g² of the (loss-scaled) gradients
};

class ZeroStrategy {
 public:
  virtual ~ZeroStrategy() = default;

  virtual int stage() const = 0;
  // Before each micro-step's backward: whether it is the boundary's (the
  // one whose gradients are reduced; stage 1 reduces from the backward
  // hooks then). Default: nothing.
  virtual void before_backward(bool /*boundary*/) {}
  // After each micro-step's backward (stage 2 reduces here every micro-step).
  virtual Status after_backward(bool boundary) = 0;
  // At the boundary: owned_gradients() become the gradients combined over
  // ranks (mean or sum per gradient_allreduce_op), still loss-scaled.
  virtual Status reduce_gradients() = 0;
  // After reduce_gradients: overflow and Σ g² of the reduced gradients
  // over all ranks (each rank's owned part summed in double, in fixed
  // blocks; a partitioned stage then max-reduces the overflow flag and
  // sums the squares in fp32 over the ranks).
  StatusOr<GradientStats> gradient_stats();
  // fp32; or, where the optimizer reads 16-bit gradients
  // (StrategyOptions::optimizer_reads_16bit_gradients), the model dtype's.
  virtual Tensor owned_gradients() = 0;
  virtual Tensor owned_master() = 0;     // fp32
  // optimizer->state_count() tensors, each owned_master()'s length.
  virtual std::span<const Tensor> optimizer_states() = 0;
  // After the optimizer step: the model computes from the new weights
  // (rounded to the model dtype; stages 1-3 also gather them).
  virtual Status publish_parameters() = 0;
  virtual void zero_gradients() = 0;
  // Model states held in device memory, by category.
  virtual ModelStateBytes model_state_bytes() const = 0;
  // Model states moved to host memory by offload_optimizer / offload_param
  // (zero without offload).
  virtual ModelStateBytes host_model_state_bytes() const { return {}; }
  // The flat ranges of Ψ whose concatenation, in order, owned_master() and
  // each optimizer_states() tensor hold (stage 0: {[0, Ψ)}; stages 1-2:
  // the rank's shard; stage 3: its piece of every group). Checkpoints
  // write and re-partition by them; after writing owned_master() /
  // optimizer_states() from outside, publish_parameters() brings the model
  // up to date.
  virtual std::vector<Range> owned_ranges() const = 0;
  // Collective (every rank, between steps): out[0, Ψ) (host memory) = the
  // full weights the model computes from (rounded to the model dtype),
  // e.g. for tests and export. InvalidArgument unless out holds Ψ floats.
  virtual Status gather_full_parameters(std::span<float> out) = 0;
  // Completes the collectives a step leaves running (stages 1-2 with
  // overlap_comm: the parameter all-gather, which otherwise lands under
  // the next forward). For measurements of one step's traffic; nothing
  // else needs it (every reader of the weights waits itself).
  virtual Status wait_communication() { return Status(); }
  // The engine runs the optimizer over owned_master() / owned_gradients() /
  // optimizer_states() in consecutive chunks of at most this many elements
  // (sub_group_size: bounds the optimizer's working set); 0: one chunk. The
  // optimizers are element-wise, so chunking never changes the result.
  virtual int64_t optimizer_sub_group_size() const { return 0; }
  // LoRA: fills m's frozen base from `read` (Module::load_frozen); stage 3
  // keeps only this rank's partition of it.
  virtual Status load_frozen(model::Module& m, const model::ReadFlatFn& read) {
    return m.load_frozen(read);
  }
  // The frozen base this strategy holds in device / host memory (stage 3's
  // partition; the other stages leave it whole in the model).
  virtual int64_t frozen_bytes() const { return 0; }
  virtual int64_t host_frozen_bytes() const { return 0; }

 protected:
  // Whether ranks hold different parts of the gradients (stages 1-3), so
  // gradient_stats reduces over them; stage 0's ranks hold identical ones.
  virtual bool gradients_partitioned() const = 0;
  // The communicator gradient_stats reduces over.
  virtual comm::Communicator& communicator() const = 0;
};

}  // namespace zerotrain::zero
