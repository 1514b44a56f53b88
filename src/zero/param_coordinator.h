// ParamCoordinator: ZeRO stage 3's decisions about gathered parameters —
// which groups to all-gather, when (on demand or prefetched ahead), and
// when to release them — over a fixed trace of compute steps. It decides;
// a GatherBackend does the collectives and owns the buffers (stage3's
// strategy, or a fake in tests).
//
// The trace is one micro-step: forward stages 0..G-1, then backward stages
// G-1..0, each step naming the groups it reads (Module::param_groups_read:
// a tied head step also reads group 0, the embedding; the encoder's backward
// reads none). For step i:
//   before_step(i): every group step i reads is gathered (started if not
//     yet, then finished); then, if stage3_prefetch_bucket_size > 0, the
//     groups of the following steps are started in trace order while the
//     elements looked ahead (already gathered ones count too) stay within
//     the bucket. With an async backend these run while step i computes.
//   after_step(i): each group step i read is released unless its next use
//     in this trace is within stage3_max_reuse_distance elements: the
//     elements the steps in between read (the last forward step is the
//     first backward step: distance 0, kept for any max_reuse_distance > 0).
//   stage3_max_live_parameters bounds the elements of all gathered or
//     in-flight groups at every moment: a prefetch that would exceed it is
//     not started (it is tried again at the next step); a group a step needs
//     first evicts kept or prefetched groups not needed now, farthest next
//     use first. create() refuses a bound below what one step needs.
// Decisions depend only on the step sequence, never on timing, so every
// rank issues the same collectives in the same order. A before_step(0), or
// any step out of sequence (a forward without backward: evaluation), first
// releases everything (finishing what is in flight).
//
//   ZT_ASSIGN_OR_RETURN(auto c, ParamCoordinator::create(trace, numel, options, &backend));
//   ZT_RETURN_IF_ERROR(c.before_step(i));  ... compute ...  ZT_RETURN_IF_ERROR(c.after_step(i));
//   c.stats().live_high_water;              // the instrumented peak of gathered elements
//
// Thread-safety: one owner (the compute thread); the backend's collectives
// may run on the communication thread.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/status.h"

namespace zerotrain::zero {

class GatherBackend {
 public:
  virtual ~GatherBackend() = default;
  // Allocates group g's full buffer and starts its gather (it may complete
  // at once: overlap_comm off).
  virtual Status start_gather(int g) = 0;
  // Waits for the gather and makes the group readable by the model.
  virtual Status finish_gather(int g) = 0;
  // Frees the group's buffer (its gather has been finished).
  virtual void release(int g) = 0;
};

struct TraceStep {
  std::vector<int> groups;  // groups this step reads
  std::string name;         // for messages: "forward stage 1 (h.0)"
};

struct CoordinatorOptions {
  int64_t prefetch_bucket_size = 0;  // elements looked ahead; 0: no prefetch
  int64_t max_live_parameters = std::numeric_limits<int64_t>::max();
  int64_t max_reuse_distance = 0;  // elements; 0: release after every use
};

struct CoordinatorStats {
  int64_t gathers = 0;     // start_gather calls
  int64_t prefetches = 0;  // of those, started ahead of the step that needs them
  int64_t kept = 0;        // releases skipped for reuse
  int64_t evictions = 0;   // groups released early to make room
  int64_t live_high_water = 0;  // most elements gathered or in flight at once
};

class ParamCoordinator {
 public:
  ParamCoordinator() = default;
  // group_numel[g]: the elements group g's gathered buffer holds.
  // InvalidArgument for a group out of range. A step that reads more than
  // max_live_parameters still gathers it all (a warning says so, once).
  static StatusOr<ParamCoordinator> create(std::vector<TraceStep> trace,
                                           std::vector<int64_t> group_numel,
                                           const CoordinatorOptions& options,
                                           GatherBackend* backend);

  int steps() const { return static_cast<int>(trace_.size()); }
  Status before_step(int step);
  Status after_step(int step);
  // Finishes whatever is in flight and releases every group (parameters
  // changed, or a pass was abandoned). The first error is returned after
  // all have been released.
  Status release_all();

  bool gathered(int g) const { return state_[static_cast<size_t>(g)] == State::kAvailable; }
  int64_t live() const { return live_; }
  const CoordinatorStats& stats() const { return stats_; }

 private:
  enum class State { kReleased, kInFlight, kAvailable };
  // The next step after `step` that reads g (steps() if none), and the
  // elements read by the steps strictly in between.
  int next_use(int step, int g, int64_t* distance) const;
  bool needed_by(int step, int g) const;
  Status start(int g, bool prefetch);
  Status finish(int g);
  Status release(int g);
  Status make_room(int64_t numel, int step);
  Status prefetch_after(int step);

  std::vector<TraceStep> trace_;
  std::vector<int64_t> numel_;
  std::vector<int64_t> step_numel_;  // elements each step reads
  CoordinatorOptions options_;
  GatherBackend* backend_ = nullptr;
  std::vector<State> state_;
  int64_t live_ = 0;
  int cursor_ = -1;  // the step last begun; -1 between traces
  CoordinatorStats stats_;
};

}  // namespace zerotrain::zero
