// Engine: micro-step bookkeeping and the boundary step (see engine.h).
#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/log.h"
#include "engine/builders.h"
#include "engine/precision.h"
#include "device/cpu/threads.h"
#include "optim/grad_utils.h"
#include "device/cpu/host_buffer.h"
#include "zero/partition_array.h"

namespace zerotrain::engine {

Engine::~Engine() = default;

namespace {

using Clock = std::chrono::steady_clock;

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

StatusOr<std::unique_ptr<Engine>> Engine::create(const config::Config& config,
                                                 model::GptModel* model, comm::Communicator* comm,
                                                 const EngineOptions& options) {
  if (model == nullptr || comm == nullptr)
    return invalid_argument("Engine::create: model and comm are required");
  ZT_RETURN_IF_ERROR(check_supported(config, *comm));
  if (options.configure_threads)
    device::cpu::configure_compute_threads(options.local_ranks > 0 ? options.local_ranks
                                 : device::cpu::local_ranks_from_env(comm->world_size()));

  std::unique_ptr<Engine> e(new Engine());
  e->config_ = config;
  e->model_ = model;
  e->comm_ = comm;
  e->gas_ = config.batch.gradient_accumulation_steps;
  ZT_ASSIGN_OR_RETURN(optim::OptimizerOptions opt_options, optimizer_options(config.optimizer));
  ZT_ASSIGN_OR_RETURN(e->optimizer_, optim::make_optimizer(opt_options));
  ZT_ASSIGN_OR_RETURN(e->scheduler_, make_scheduler(config.scheduler, e->optimizer_->lr()));
  ZT_ASSIGN_OR_RETURN(e->scaler_, make_scaler(config, comm->rank() == 0));

  ZT_ASSIGN_OR_RETURN(e->strategy_,
                      make_zero_strategy(config, model, comm, e->optimizer_->state_count()));

  // DeepSpeed's schedulers write their initial lr at construction.
  if (e->scheduler_) optim::apply_lr(*e->scheduler_, *e->optimizer_);
  e->strategy_->zero_gradients();
  return e;
}

StatusOr<float> Engine::forward(const int32_t* tokens, const int32_t* targets, int64_t B,
                                int64_t T) {
  backward_pending_ = false;
  const auto t0 = Clock::now();
  ZT_ASSIGN_OR_RETURN(float loss, model_->forward(tokens, targets, B, T));
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
  Status s = strategy_->after_backward(boundary);
  times_.backward += seconds_since(t0);
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
                                 int64_t T) {
  if (backward_pending_)
    return invalid_argument(
        "Engine::evaluate: a forward awaits its backward; evaluate between "
        "optimizer steps");
  return model_->forward(tokens, targets, B, T, /*for_backward=*/false);
}

bool Engine::is_gradient_accumulation_boundary() const { return (micro_steps_ + 1) % gas_ == 0; }

StatusOr<bool> Engine::any_rank_overflowed(double local_sq) {
  // The squares are summed in double, where no fp32 value's square
  // overflows: the sum is finite exactly when every gradient is.
  float flag = std::isfinite(local_sq) ? 0.0f : 1.0f;
  // Unpartitioned grads are identical on every rank after the reduce, so
  // the local flag already is the max over ranks.
  if (strategy_->gradients_partitioned() && comm_->world_size() > 1)
    ZT_RETURN_IF_ERROR(comm_->allreduce(std::span<float>(&flag, 1), comm::ReduceOp::kMax));
  return flag != 0.0f;
}

StatusOr<double> Engine::grad_norm(double local_sq) {
  double sq = local_sq;
  if (strategy_->gradients_partitioned() && comm_->world_size() > 1) {
    // fp32 on the wire; the partial sums are already accumulated in double.
    float f = static_cast<float>(sq);
    ZT_RETURN_IF_ERROR(comm_->allreduce(std::span<float>(&f, 1), comm::ReduceOp::kSum));
    sq = f;
  }
  return std::sqrt(sq);
}

Status Engine::boundary_step() {
  StepInfo info;
  info.loss_scale = scaler_->loss_scale();
  info.lr = optimizer_->lr();
  const auto t0 = Clock::now();
  ZT_RETURN_IF_ERROR(strategy_->reduce_gradients());
  times_.reduce += seconds_since(t0);
  std::span<float> grads = strategy_->owned_gradients();
  // fp16 gradients pass through fp16, so a loss-scaled gradient beyond its
  // range (65504) overflows to inf as in real fp16 and the scaler sees it.
  if (config_.fp16.enabled) zero::round_to(DType::kFloat16, grads, grads);

  // One pass over the gradients gives both the overflow check and the norm.
  const double local_sq = optim::squared_l2_norm(grads);
  ZT_ASSIGN_OR_RETURN(info.overflow, any_rank_overflowed(local_sq));
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

  ZT_ASSIGN_OR_RETURN(const double norm, grad_norm(local_sq));
  info.grad_norm = norm / info.loss_scale;
  // Unscaling and clipping are one factor, which the optimizer applies to
  // each gradient as it reads it (the bits unscale_and_clip would give).
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

// The optimizer over the owned partition, in the strategy's sub-groups.
Status Engine::update_in_sub_groups(std::span<const float> grads, float grad_scale) {
  std::span<float> master = strategy_->owned_master();
  std::span<const std::span<float>> states = strategy_->optimizer_states();
  const int64_t sub = strategy_->optimizer_sub_group_size();
  const size_t chunk = sub > 0 ? static_cast<size_t>(sub) : std::max<size_t>(master.size(), 1);
  std::vector<std::span<float>> part(states.size());
  for (size_t off = 0; off < master.size() || off == 0; off += chunk) {
    const size_t len = std::min(chunk, master.size() - off);
    for (size_t i = 0; i < states.size(); ++i) part[i] = states[i].subspan(off, len);
    ZT_RETURN_IF_ERROR(optimizer_->update(master.subspan(off, len),
                                          make_view(grads.subspan(off, len)), part, {},
                                          grad_scale));
    if (off + len >= master.size()) break;
  }
  return Status();
}

MemoryReport Engine::memory() const {
  MemoryReport r;
  r.model_states = strategy_->model_state_bytes();
  r.host_model_states = strategy_->host_model_state_bytes();
  r.activation_bytes = model_->memory().activation_bytes;
  r.numel = model_->layout().total_numel();
  r.formula_bytes = zero_formula_bytes(strategy_->stage(), r.numel, comm_->world_size());
  r.pinned_host_bytes = device::cpu::host_memory::pinned_bytes();
  return r;
}

}  // namespace zerotrain::engine
