// Engine: micro-step bookkeeping and the boundary step (see engine.h).
#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/log.h"
#include "device/device.h"
#include "device/ops.h"
#include "engine/builders.h"
#include "engine/precision.h"
#include "optim/grad_utils.h"
#include "zero/factory.h"
#include "zero/options.h"

namespace zerotrain::engine {

Engine::~Engine() = default;

namespace {

using Clock = std::chrono::steady_clock;

// A tensor's values in `home` memory: itself when it lives there, else a
// staged copy (device memory counted as buffers, or host memory).
struct Staged {
  device::Buffer device;
  std::vector<float> host;
};
StatusOr<Tensor> stage_in(Tensor t, device::Device* home, Staged* keep) {
  if (t.device == home) return t;
  Tensor copy;
  if (home == nullptr) {
    keep->host.resize(t.numel);
    copy = Tensor(std::span<float>(keep->host));
  } else {
    ZT_ASSIGN_OR_RETURN(
        keep->device,
        home->allocate(t.size_bytes(), device::MemoryCategory::kBuffers, "optimizer staging"));
    copy = keep->device.tensor(t.dtype);
  }
  ZT_RETURN_IF_ERROR(device::copy(t, copy));
  return copy;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

Status check_supported(const config::Config& config, const comm::Communicator& comm) {
  if (config.batch.world_size != comm.world_size())
    return invalid_argument("the config's batch sizes were solved for world size " +
                            std::to_string(config.batch.world_size) + " but the communicator has " +
                            std::to_string(comm.world_size()) +
                            " ranks (pass TrainerArgs.world_size)");
  if (config.batch.gradient_accumulation_steps < 1)
    return invalid_argument("gradient_accumulation_steps: must be >= 1");
  return Status();
}

}  // namespace

StatusOr<std::unique_ptr<Engine>> Engine::create(const config::Config& config, model::Module* model,
                                                 comm::Communicator* comm,
                                                 const EngineOptions& options) {
  if (model == nullptr || comm == nullptr)
    return invalid_argument("Engine::create: model and comm are required");
  ZT_RETURN_IF_ERROR(check_supported(config, *comm));
  if (options.configure_threads)
    device::configure_host_threads(options.local_ranks, comm->world_size());

  std::unique_ptr<Engine> e(new Engine());
  e->config_ = config;
  e->model_ = model;
  e->comm_ = comm;
  e->gas_ = config.batch.gradient_accumulation_steps;
  ZT_ASSIGN_OR_RETURN(optim::OptimizerOptions opt_options, optimizer_options(config.optimizer));
  ZT_ASSIGN_OR_RETURN(e->optimizer_, optim::make_optimizer(opt_options));
  ZT_ASSIGN_OR_RETURN(e->scheduler_, make_scheduler(config.scheduler, e->optimizer_->lr()));
  ZT_ASSIGN_OR_RETURN(e->scaler_, make_scaler(config, comm->rank() == 0));

  // A device that runs out while the strategy allocates says what would fit.
  const zero::ModelStateSetup setup =
      zero::model_state_setup(config, model->layout().total_numel(), comm->world_size());
  const int64_t activations = model->memory().activation_bytes;
  device::Device& d = model->device();
  d.set_oom_advice(
      [setup, activations, &d] { return zero::capacity_advice(setup, activations, d.capacity()); });
  ZT_ASSIGN_OR_RETURN(e->strategy_,
                      zero::make_strategy(config, model, comm,
                                          {.state_count = e->optimizer_->state_count(),
                                           .reads_16bit_gradients =
                                               e->optimizer_->reads_16bit_gradients()},
                                          options.initial_weights));

  // DeepSpeed's schedulers write their initial lr at construction.
  if (e->scheduler_) optim::apply_lr(*e->scheduler_, *e->optimizer_);
  e->strategy_->zero_gradients();
  return e;
}

StatusOr<float> Engine::forward(const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T,
                                const int32_t* doc_starts) {
  backward_pending_ = false;
  const auto t0 = Clock::now();
  ZT_ASSIGN_OR_RETURN(float loss, model_->forward(tokens, targets, B, T, true, doc_starts));
  times_.forward += seconds_since(t0);
  backward_pending_ = targets != nullptr;
  return loss;
}

Status Engine::backward() {
  if (!backward_pending_)
    return invalid_argument("Engine::backward: no forward() with targets since the last backward");
  backward_pending_ = false;
  const double dloss = scaler_->loss_scale() / static_cast<double>(gas_);
  const auto t0 = Clock::now();
  const bool boundary = is_gradient_accumulation_boundary();
  strategy_->before_backward(boundary);
  ZT_RETURN_IF_ERROR(model_->backward(static_cast<float>(dloss)));
  times_.backward += seconds_since(t0);
  // What the strategy does after the pass (the buckets the hooks left, the
  // wait for overlapped ones) is the reduction's exposed time, as
  // DeepSpeed's bwd_allreduce timer counts its epilogue.
  const auto t1 = Clock::now();
  Status s = strategy_->after_backward(boundary);
  times_.reduce += seconds_since(t1);
  return s;
}

Status Engine::step() {
  const bool boundary = is_gradient_accumulation_boundary();
  ++micro_steps_;
  if (!boundary) return Status();
  const auto t0 = Clock::now();
  const double reduce_before = times_.reduce;
  Status s = boundary_step();
  times_.step += seconds_since(t0) - (times_.reduce - reduce_before);
  ++times_.boundaries;
  return s;
}

StatusOr<float> Engine::evaluate(const int32_t* tokens, const int32_t* targets, int64_t B,
                                 int64_t T, const int32_t* doc_starts) {
  if (backward_pending_)
    return invalid_argument(
        "Engine::evaluate: a forward awaits its backward; evaluate between "
        "optimizer steps");
  return model_->forward(tokens, targets, B, T, /*for_backward=*/false, doc_starts);
}

bool Engine::is_gradient_accumulation_boundary() const { return (micro_steps_ + 1) % gas_ == 0; }

Status Engine::boundary_step() {
  StepInfo info;
  info.loss_scale = scaler_->loss_scale();
  info.lr = optimizer_->lr();
  const auto t0 = Clock::now();
  ZT_RETURN_IF_ERROR(strategy_->reduce_gradients());
  times_.reduce += seconds_since(t0);
  const Tensor grads = strategy_->owned_gradients();
  // fp16 gradients pass through fp16, so a loss-scaled gradient beyond its
  // range (65504) overflows to inf as in real fp16 and the scaler sees it
  // (an fp16 accumulator handed over as it is already has).
  if (config_.fp16.enabled && grads.dtype == DType::kFloat32)
    ZT_RETURN_IF_ERROR(device::ops_for(grads).round_through(DType::kFloat16, grads, grads));

  // One pass over the gradients gives both the overflow check and the norm.
  ZT_ASSIGN_OR_RETURN(const zero::GradientStats stats, strategy_->gradient_stats());
  info.overflow = stats.overflow;
  ZT_ASSIGN_OR_RETURN(bool skip, scaler_->update(info.overflow));
  ++global_steps_;
  if (skip) {
    ++skipped_steps_;
    info.skipped = true;
    info.grad_norm = std::numeric_limits<double>::quiet_NaN();
    strategy_->zero_gradients();
    last_step_ = info;
    return Status();
  }

  const double norm = std::sqrt(stats.sum_squares);
  info.grad_norm = norm / info.loss_scale;
  // Unscaling and clipping are one factor, which the optimizer applies to
  // each gradient as it reads it (the bits scaling them first would give).
  const float grad_scale =
      optim::unscale_and_clip_factor(norm, info.loss_scale, config_.gradient_clipping);

  optimizer_->begin_step();
  ZT_RETURN_IF_ERROR(update_in_sub_groups(grads, grad_scale));
  if (scheduler_) {
    scheduler_->step();
    optim::apply_lr(*scheduler_, *optimizer_);
  }
  ZT_RETURN_IF_ERROR(strategy_->publish_parameters());
  strategy_->zero_gradients();
  last_step_ = info;
  return Status();
}

// The optimizer over the owned partition, in the strategy's sub-groups,
// in the memory its states live in. An owned array elsewhere (fp32 stage
// 3's master, which is its parameter partition, offloaded by
// offload_param while the states stay on the device) is staged there for
// the chunk and the master copied back.
Status Engine::update_in_sub_groups(Tensor grads, float grad_scale) {
  const Tensor master = strategy_->owned_master();
  std::span<const Tensor> states = strategy_->optimizer_states();
  device::Device* home = states.empty() ? master.device : states.front().device;
  const int64_t sub = strategy_->optimizer_sub_group_size();
  const size_t chunk = sub > 0 ? static_cast<size_t>(sub) : std::max<size_t>(master.numel, 1);
  std::vector<Tensor> part(states.size());
  for (size_t off = 0; off < master.numel || off == 0; off += chunk) {
    const size_t len = std::min(chunk, master.numel - off);
    for (size_t i = 0; i < states.size(); ++i) part[i] = states[i].slice(off, len);
    const Tensor own = master.slice(off, len);
    Staged m, g;
    ZT_ASSIGN_OR_RETURN(const Tensor p, stage_in(own, home, &m));
    ZT_ASSIGN_OR_RETURN(const Tensor gr, stage_in(grads.slice(off, len), home, &g));
    ZT_RETURN_IF_ERROR(optimizer_->update(p, gr, part, {}, grad_scale));
    if (p.data != own.data) ZT_RETURN_IF_ERROR(device::copy(p, own));
    if (off + len >= master.numel) break;
  }
  return Status();
}

MemoryReport Engine::memory() const {
  MemoryReport r;
  r.model_states = strategy_->model_state_bytes();
  r.host_model_states = strategy_->host_model_state_bytes();
  r.activation_bytes = model_->memory().activation_bytes;
  r.frozen_bytes = model_->memory().frozen_bytes + strategy_->frozen_bytes();
  r.host_frozen_bytes = strategy_->host_frozen_bytes();
  r.numel = model_->layout().total_numel();
  r.formula_bytes = zero_formula_bytes(strategy_->stage(), r.numel, comm_->world_size());
  r.pinned_host_bytes = model_->device().pinned_bytes();
  r.device_usage = model_->device().usage();
  r.device_capacity = model_->device().capacity();
  return r;
}

}  // namespace zerotrain::engine
