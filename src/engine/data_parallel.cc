// ZeRO stage 0: in-place all-reduce of the flat gradient buffer.
#include "engine/data_parallel.h"

#include <cmath>
#include <cstring>
#include <string>

#include "optim/grad_utils.h"
#include "zero/grad_wire.h"

namespace zerotrain::engine {

StatusOr<std::unique_ptr<DataParallelStrategy>> DataParallelStrategy::create(
    const DataParallelOptions& o) {
  if (o.model == nullptr || o.comm == nullptr)
    return invalid_argument("DataParallelStrategy: model and comm are required");
  if (o.model->parameters() == nullptr || o.model->gradients() == nullptr)
    return invalid_argument(
        "DataParallelStrategy: the model needs flat parameter and gradient buffers "
        "(GptModelOptions own_parameters/own_gradients, or set_parameters/set_gradients)");
  if (o.state_count < 0) return invalid_argument("DataParallelStrategy: state_count < 0");
  if (!(o.predivide_factor > 0) || !std::isfinite(o.predivide_factor))
    return invalid_argument("gradient_predivide_factor: must be a positive number, got " +
                            std::to_string(o.predivide_factor));
  std::unique_ptr<DataParallelStrategy> s(new DataParallelStrategy(o));
  const size_t n = static_cast<size_t>(o.model->layout().total_numel());
  s->params_ = {o.model->parameters(), n};
  s->grads_ = {o.model->gradients(), n};
  if (o.comm->world_size() > 1) ZT_RETURN_IF_ERROR(o.comm->broadcast(s->params_, 0));
  if (o.dtype == DType::kFloat32) {
    s->master_ = s->params_;
  } else {
    ZT_ASSIGN_OR_RETURN(s->own_master_, device::cpu::AlignedBuffer<float>::allocate(n));
    std::memcpy(s->own_master_.data(), s->params_.data(), s->params_.size_bytes());
    s->master_ = s->own_master_.span();
    ZT_ASSIGN_OR_RETURN(
        s->half_,
        zero::HalfComputeCopy::create(
            {.model = o.model, .dtype = o.dtype, .accumulate_gradients = true},
            s->params_));
    s->params_ = {};
    s->grads_ = {};
    s->install_hooks();
  }
  for (int i = 0; i < o.state_count; ++i) {
    ZT_ASSIGN_OR_RETURN(device::cpu::AlignedBuffer<float> b, device::cpu::AlignedBuffer<float>::allocate(n));
    s->states_.push_back(std::move(b));
    s->state_spans_.push_back(s->states_.back().span());
  }
  return s;
}

DataParallelStrategy::~DataParallelStrategy() {
  if (half_) options_.model->set_hooks({});
}

void DataParallelStrategy::install_hooks() {
  model::GroupHooks h;
  h.before_forward = [this](int g) { return half_->before_forward(g); };
  h.after_forward = [this](int g) { return half_->after_forward(g); };
  h.before_backward = [this](int g) { return half_->before_backward(g); };
  h.after_backward = [this](int g) { return half_->after_backward(g); };
  options_.model->set_hooks(std::move(h));
}

Status DataParallelStrategy::reduce_gradients() {
  if (half_) {  // the 16-bit sums, as fp32, for the reduction and the optimizer
    const auto n = static_cast<size_t>(options_.model->layout().total_numel());
    // In the activation memory, idle until the next forward, when it is
    // large enough: this transient then adds nothing to the peak.
    float* lent = options_.model->lend_activation_memory(static_cast<int64_t>(n));
    if (lent == nullptr) {
      ZT_ASSIGN_OR_RETURN(step_grads_, device::cpu::AlignedBuffer<float>::allocate(n));
      lent = step_grads_.data();
    }
    grads_ = {lent, n};
    half_->gradients().read(0, n, grads_.data());
  }
  comm::Communicator& c = *options_.comm;
  if (c.world_size() == 1) return Status();
  // DeepSpeed's allreduce_bucket: sum; prescale (g/N, then sum); mean; or
  // predivide (g/f, sum, then * f/N: fp16 headroom).
  const float n = static_cast<float>(c.world_size());
  float pre = 1.0f, post = 1.0f;
  comm::ReduceOp op = comm::ReduceOp::kSum;
  if (options_.allreduce_op == config::AllreduceOp::kMean) {
    const double f = options_.predivide_factor;
    if (options_.prescale) {
      pre = 1.0f / n;
    } else if (f == 1.0) {
      op = comm::ReduceOp::kAvg;
    } else {
      pre = static_cast<float>(1.0 / f);
      post = static_cast<float>(f / c.world_size());
    }
  }
  const DType wire = options_.grad_wire;
  if (wire == DType::kFloat32) {
    if (pre != 1.0f) optim::scale_in_place(grads_, pre);
    ZT_RETURN_IF_ERROR(c.allreduce(grads_, op));
    if (post != 1.0f) optim::scale_in_place(grads_, post);
    return Status();
  }
  std::span<std::byte> w = zero::narrow_in_place(grads_, pre, wire);
  ZT_RETURN_IF_ERROR(c.allreduce(w, wire, op));
  zero::widen_in_place(w.data(), grads_.size(), wire, post, grads_.data());
  return Status();
}

Status DataParallelStrategy::publish_parameters() {
  if (!half_) return Status();               // fp32: the model's buffer is the master
  ZT_RETURN_IF_ERROR(half_->release_all());  // expansions of the old weights
  half_->parameters().write(0, master_);     // rounded to the 16-bit type
  return Status();
}

void DataParallelStrategy::zero_gradients() {
  if (!half_) return options_.model->zero_gradients();
  half_->zero_gradients();
  step_grads_ = {};
  grads_ = {};
  options_.model->return_activation_memory();
}

Status DataParallelStrategy::gather_full_parameters(std::span<float> out) {
  const auto n = static_cast<size_t>(options_.model->layout().total_numel());
  if (out.size() != n)
    return invalid_argument("gather_full_parameters: needs " + std::to_string(n) + " floats, got " +
                            std::to_string(out.size()));
  if (half_)
    half_->parameters().read(0, n, out.data());
  else
    std::memcpy(out.data(), params_.data(), out.size_bytes());
  return Status();
}

ModelStateBytes DataParallelStrategy::model_state_bytes() const {
  ModelStateBytes b;
  if (half_) {
    b.parameters = half_->parameters().size_bytes();
    b.gradients = half_->gradients().size_bytes();
    b.buffers = half_->buffer_bytes() + static_cast<int64_t>(step_grads_.size_bytes());
  } else {
    b.parameters = static_cast<int64_t>(params_.size_bytes());
    b.gradients = static_cast<int64_t>(grads_.size_bytes());
  }
  b.master_weights = static_cast<int64_t>(own_master_.size_bytes());
  for (const auto& s : states_) b.optimizer_states += static_cast<int64_t>(s.size_bytes());
  return b;
}

}  // namespace zerotrain::engine
