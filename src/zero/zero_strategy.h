// ZeroStrategy: what a ZeRO stage owns and does for the Engine — where the
// fp32 master weights, the optimizer states and the reduced gradients live,
// how gradients are combined over ranks and how new weights reach the
// model. The Engine keeps the precision and step logic (overflow, loss
// scale, clipping, optimizer, scheduler) and drives a strategy through this
// interface only, so stages 1-3 plug in without touching the step:
//
//   micro-step:  model backward into model grads -> after_backward(boundary)
//   boundary:    reduce_gradients() -> [engine: overflow, norm, clip]
//                -> optimizer on (owned_master, owned_gradients, states)
//                -> publish_parameters() -> zero_gradients()
//
// "Owned" is this rank's partition: everything for stage 0, a 1/N shard
// for stages 1-3 (its real elements only: padding is never owned). When
// gradients_partitioned(), the engine sums norms and max-reduces overflow
// flags over ranks; otherwise each rank already holds the full, identical
// result.
//
//   ZT_RETURN_IF_ERROR(s->reduce_gradients());
//   opt.update(s->owned_master(), s->owned_gradients(), s->optimizer_states());
//   ZT_RETURN_IF_ERROR(s->publish_parameters());
//
// Thread-safety: one owner (the Engine); not synchronised.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "core/range.h"

namespace zerotrain::zero {

// Bytes of model states this rank holds (DESIGN.md "ZeRO memory per rank"),
// each category exactly what is allocated for it.
struct ModelStateBytes {
  int64_t parameters = 0;        // the model's compute copy
  int64_t gradients = 0;         // persistent gradients (stage 0/1: the model's buffer;
                                 // stage 2: the own partition's accumulator)
  int64_t master_weights = 0;    // fp32 master copy; 0 when it is the compute copy (fp32)
  int64_t optimizer_states = 0;  // Adam: m and v
  // Reused staging that holds no state between micro-steps: the
  // communication buckets, and for stage 2 the model's full gradient buffer
  // that each backward writes into and the reduction empties again.
  int64_t buffers = 0;
  int64_t total() const {
    return parameters + gradients + master_weights + optimizer_states + buffers;
  }
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
  virtual bool gradients_partitioned() const = 0;
  virtual std::span<float> owned_gradients() = 0;
  virtual std::span<float> owned_master() = 0;
  // optimizer->state_count() spans, each owned_master().size() long.
  virtual std::span<const std::span<float>> optimizer_states() = 0;
  // After the optimizer step: the model computes from the new weights
  // (rounded to the model dtype; stages 1-3 also gather them).
  virtual Status publish_parameters() = 0;
  virtual void zero_gradients() = 0;
  // Model states held in (device) compute memory, by category.
  virtual ModelStateBytes model_state_bytes() const = 0;
  // Model states moved to host memory by offload_optimizer / offload_param
  // (zero without offload). On this CPU build "device" and "host" are the
  // same RAM; the split says which buffers a GPU build would keep where.
  virtual ModelStateBytes host_model_state_bytes() const { return {}; }
  // The flat ranges of Ψ whose concatenation, in order, owned_master() and
  // each optimizer_states() span hold (stage 0: {[0, Ψ)}; stages 1-2: the
  // rank's shard; stage 3: its piece of every group). Checkpoints write and
  // re-partition by them; after writing owned_master()/optimizer_states()
  // from outside, publish_parameters() brings the model up to date.
  virtual std::vector<Range> owned_ranges() const = 0;
  // Collective (every rank, between steps): out[0, Ψ) = the full weights
  // the model computes from (rounded to the model dtype), e.g. for tests
  // and export. InvalidArgument unless out holds Ψ floats.
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
};

// DESIGN.md's per-rank model-state bytes for Adam (K = 12) over Ψ = numel
// elements and N ranks: stage 0 16Ψ, 1 4Ψ + 12Ψ/N, 2 2Ψ + 14Ψ/N, 3 16Ψ/N
// (divisions rounded up).
int64_t zero_formula_bytes(int stage, int64_t numel, int world_size);

}  // namespace zerotrain::zero
