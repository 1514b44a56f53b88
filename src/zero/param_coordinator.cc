// ParamCoordinator: gather / prefetch / release decisions (see
// param_coordinator.h).
#include "zero/param_coordinator.h"

#include <algorithm>
#include <utility>

#include "core/log.h"

namespace zerotrain::zero {

StatusOr<ParamCoordinator> ParamCoordinator::create(std::vector<TraceStep> trace,
                                                    std::vector<int64_t> group_numel,
                                                    const CoordinatorOptions& options,
                                                    GatherBackend* backend) {
  if (backend == nullptr) return invalid_argument("ParamCoordinator: a backend is required");
  ParamCoordinator c;
  c.numel_ = std::move(group_numel);
  c.options_ = options;
  c.backend_ = backend;
  c.state_.assign(c.numel_.size(), State::kReleased);
  for (const TraceStep& s : trace) {
    int64_t n = 0;
    for (int g : s.groups) {
      if (g < 0 || static_cast<size_t>(g) >= c.numel_.size())
        return invalid_argument("ParamCoordinator: " + s.name + " reads group " +
                                std::to_string(g) + " of " + std::to_string(c.numel_.size()));
      n += c.numel_[static_cast<size_t>(g)];
    }
    c.step_numel_.push_back(n);
  }
  // A bound below what one step reads does not stop that step (DeepSpeed
  // always fetches the module it runs; its bound limits prefetch and what
  // stays gathered): each step gathers what it reads and nothing more.
  // Said once, naming the step that needs the most.
  const auto most = std::max_element(c.step_numel_.begin(), c.step_numel_.end());
  if (most != c.step_numel_.end() && *most > options.max_live_parameters)
    log::warn("zero_optimization.stage3_max_live_parameters: ", options.max_live_parameters,
              " is below the ", *most, " parameter elements ",
              trace[static_cast<size_t>(most - c.step_numel_.begin())].name,
              " reads at once; each step gathers what it reads (as in DeepSpeed) and nothing is "
              "prefetched or kept beyond it");
  c.trace_ = std::move(trace);
  return c;
}

bool ParamCoordinator::needed_by(int step, int g) const {
  const auto& gs = trace_[static_cast<size_t>(step)].groups;
  return std::find(gs.begin(), gs.end(), g) != gs.end();
}

int ParamCoordinator::next_use(int step, int g, int64_t* distance) const {
  int64_t d = 0;
  for (int j = step + 1; j < steps(); ++j) {
    if (needed_by(j, g)) {
      if (distance != nullptr) *distance = d;
      return j;
    }
    d += step_numel_[static_cast<size_t>(j)];
  }
  if (distance != nullptr) *distance = d;
  return steps();
}

Status ParamCoordinator::start(int g, bool prefetch) {
  state_[static_cast<size_t>(g)] = State::kInFlight;
  live_ += numel_[static_cast<size_t>(g)];
  stats_.live_high_water = std::max(stats_.live_high_water, live_);
  ++stats_.gathers;
  if (prefetch) ++stats_.prefetches;
  return backend_->start_gather(g);
}

Status ParamCoordinator::finish(int g) {
  state_[static_cast<size_t>(g)] = State::kAvailable;
  return backend_->finish_gather(g);
}

Status ParamCoordinator::release(int g) {
  Status s;
  if (state_[static_cast<size_t>(g)] == State::kReleased) return s;
  if (state_[static_cast<size_t>(g)] == State::kInFlight) s = finish(g);
  backend_->release(g);
  state_[static_cast<size_t>(g)] = State::kReleased;
  live_ -= numel_[static_cast<size_t>(g)];
  return s;
}

Status ParamCoordinator::release_all() {
  Status first;
  for (size_t g = 0; g < state_.size(); ++g) {
    Status s = release(static_cast<int>(g));
    if (first.ok() && !s.ok()) first = s;
  }
  cursor_ = -1;
  return first;
}

// Evicts gathered groups step `step` does not read, farthest next use
// first, until numel more elements fit under max_live_parameters.
Status ParamCoordinator::make_room(int64_t numel, int step) {
  while (live_ + numel > options_.max_live_parameters) {
    int victim = -1, victim_use = -1;
    for (size_t g = 0; g < state_.size(); ++g) {
      const int gi = static_cast<int>(g);
      if (state_[g] == State::kReleased || needed_by(step, gi)) continue;
      const int use = next_use(step, gi, nullptr);
      if (use > victim_use) victim = gi, victim_use = use;
    }
    if (victim < 0) break;  // what this step reads stays, even past the bound
    ++stats_.evictions;
    ZT_RETURN_IF_ERROR(release(victim));
  }
  return Status();
}

Status ParamCoordinator::prefetch_after(int step) {
  const int64_t bucket = options_.prefetch_bucket_size;
  if (bucket <= 0) return Status();
  std::vector<bool> seen(state_.size(), false);
  for (int g : trace_[static_cast<size_t>(step)].groups) seen[static_cast<size_t>(g)] = true;
  int64_t ahead = 0;
  for (int j = step + 1; j < steps(); ++j) {
    for (int g : trace_[static_cast<size_t>(j)].groups) {
      const auto gi = static_cast<size_t>(g);
      if (seen[gi]) continue;
      seen[gi] = true;
      if (ahead + numel_[gi] > bucket) return Status();
      ahead += numel_[gi];
      if (state_[gi] != State::kReleased) continue;
      // Over the live bound: wait (the next step tries again), in order.
      if (live_ + numel_[gi] > options_.max_live_parameters) return Status();
      ZT_RETURN_IF_ERROR(start(g, /*prefetch=*/true));
    }
  }
  return Status();
}

Status ParamCoordinator::before_step(int step) {
  if (step < 0 || step >= steps())
    return invalid_argument("ParamCoordinator: step " + std::to_string(step) + " out of range");
  if (step == 0 || step != cursor_ + 1) ZT_RETURN_IF_ERROR(release_all());
  cursor_ = step;
  const auto& groups = trace_[static_cast<size_t>(step)].groups;
  for (int g : groups) {
    if (state_[static_cast<size_t>(g)] != State::kReleased) continue;
    ZT_RETURN_IF_ERROR(make_room(numel_[static_cast<size_t>(g)], step));
    ZT_RETURN_IF_ERROR(start(g, /*prefetch=*/false));
  }
  for (int g : groups) {
    if (state_[static_cast<size_t>(g)] == State::kInFlight) ZT_RETURN_IF_ERROR(finish(g));
  }
  return prefetch_after(step);
}

Status ParamCoordinator::after_step(int step) {
  if (step != cursor_)
    return invalid_argument("ParamCoordinator: after_step(" + std::to_string(step) +
                            ") without its before_step");
  for (int g : trace_[static_cast<size_t>(step)].groups) {
    int64_t distance = 0;
    if (next_use(step, g, &distance) < steps() && distance < options_.max_reuse_distance) {
      ++stats_.kept;
      continue;
    }
    ZT_RETURN_IF_ERROR(release(g));
  }
  if (step == steps() - 1) return release_all();
  return Status();
}

}  // namespace zerotrain::zero
