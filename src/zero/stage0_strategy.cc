// ZeRO stage 0: in-place all-reduce of the flat gradient buffer.
#include "zero/stage0_strategy.h"

#include <string>

#include "device/ops.h"

namespace zerotrain::zero {

namespace {
using device::MemoryCategory;
}

StatusOr<std::unique_ptr<DataParallelStrategy>> DataParallelStrategy::create(
    model::Module* model, comm::Communicator* comm, const StrategyOptions& o) {
  if (model == nullptr || comm == nullptr)
    return invalid_argument("DataParallelStrategy: model and comm are required");
  if (model->parameters() == nullptr || model->gradients() == nullptr)
    return invalid_argument(
        "DataParallelStrategy: the model needs flat parameter and gradient buffers "
        "(ModuleOptions own_parameters/own_gradients, or set_parameters/set_gradients)");
  ZT_RETURN_IF_ERROR(validate_common(o));
  std::unique_ptr<DataParallelStrategy> s(new DataParallelStrategy(model, comm, o));
  device::Device& d = model->device();
  const auto n = static_cast<size_t>(model->layout().total_numel());
  s->params_ = Tensor(model->parameters(), DType::kFloat32, n, &d);
  s->grads_ = Tensor(model->gradients(), DType::kFloat32, n, &d);
  if (comm->world_size() > 1) ZT_RETURN_IF_ERROR(comm->broadcast(s->params_, 0));
  if (o.dtype == DType::kFloat32) {
    s->master_ = s->params_;
  } else {
    ZT_ASSIGN_OR_RETURN(
        s->own_master_,
        d.allocate(n * sizeof(float), MemoryCategory::kMasterWeights, "fp32 master weights"));
    s->master_ = s->own_master_.tensor(DType::kFloat32);
    ZT_RETURN_IF_ERROR(device::copy(s->params_, s->master_));
    ZT_ASSIGN_OR_RETURN(
        s->half_,
        HalfComputeCopy::create({.model = model, .dtype = o.dtype, .accumulate_gradients = true},
                                s->params_));
    s->params_ = {};
    s->grads_ = {};
    s->install_hooks();
  }
  for (int i = 0; i < o.state_count; ++i) {
    ZT_ASSIGN_OR_RETURN(
        device::Buffer b,
        d.allocate(n * sizeof(float), MemoryCategory::kOptimizerStates, "optimizer states"));
    s->states_.push_back(std::move(b));
    s->state_tensors_.push_back(s->states_.back().tensor(DType::kFloat32));
  }
  return s;
}

DataParallelStrategy::~DataParallelStrategy() {
  if (half_) model_->set_hooks({});
}

void DataParallelStrategy::install_hooks() {
  model::GroupHooks h;
  h.before_forward = [this](int g) { return half_->before_forward(g); };
  h.after_forward = [this](int g) { return half_->after_forward(g); };
  h.before_backward = [this](int g) { return half_->before_backward(g); };
  h.after_backward = [this](int g) { return half_->after_backward(g); };
  model_->set_hooks(std::move(h));
}

bool DataParallelStrategy::reduces_16bit_in_place() const {
  if (!half_ || !options_.optimizer_reads_16bit_gradients) return false;
  const int world = comm_->world_size();
  if (world == 1) return true;
  // The wire's reduction of the 16-bit sums, unscaled: what narrowing
  // their exact fp32 widening would put on the wire, bit for bit.
  const ReductionPolicy r = reduction_policy(options_, world);
  return options_.grad_wire == options_.dtype && r.pre == 1.0f && r.post == 1.0f;
}

Status DataParallelStrategy::reduce_gradients() {
  device::Device& d = model_->device();
  if (reduces_16bit_in_place()) {
    // The optimizer widens each gradient as it reads it: no fp32 [Ψ] copy,
    // whose fresh pages alone cost a 135M-parameter step ~0.5 s.
    grads_ = half_->gradients().tensor();
    if (comm_->world_size() == 1) return Status();
    return comm_->allreduce(grads_, reduction_policy(options_, comm_->world_size()).op);
  }
  if (half_) {  // the 16-bit sums, as fp32, for the reduction and the optimizer
    const auto n = static_cast<size_t>(model_->layout().total_numel());
    // In the activation memory, idle until the next forward, when it is
    // large enough: this transient then adds nothing to the peak.
    float* lent = model_->lend_activation_memory(static_cast<int64_t>(n));
    if (lent == nullptr) {
      ZT_ASSIGN_OR_RETURN(step_grads_, d.allocate(n * sizeof(float), MemoryCategory::kBuffers,
                                                  "fp32 gradients of the step"));
      lent = step_grads_.as<float>();
    }
    grads_ = Tensor(lent, DType::kFloat32, n, &d);
    ZT_RETURN_IF_ERROR(half_->gradients().read(0, grads_));
  }
  comm::Communicator& c = *comm_;
  if (c.world_size() == 1) return Status();
  const ReductionPolicy r = reduction_policy(options_, c.world_size());
  const device::Ops& ops = d.ops();
  const DType wire = options_.grad_wire;
  if (wire == DType::kFloat32) {
    if (r.pre != 1.0f) ZT_RETURN_IF_ERROR(ops.scale(grads_, r.pre));
    ZT_RETURN_IF_ERROR(c.allreduce(grads_, r.op));
    if (r.post != 1.0f) ZT_RETURN_IF_ERROR(ops.scale(grads_, r.post));
    return Status();
  }
  // 16 bits on the wire: narrowed in place into the array's first bytes.
  ZT_RETURN_IF_ERROR(ops.narrow_in_place(grads_, r.pre, wire));
  const Tensor w(grads_.data, wire, grads_.numel, grads_.device);
  ZT_RETURN_IF_ERROR(c.allreduce(w, r.op));
  return ops.widen_in_place(w.data, grads_.numel, wire, r.post, grads_.ptr<float>());
}

Status DataParallelStrategy::publish_parameters() {
  if (!half_) return Status();                   // fp32: the model's buffer is the master
  ZT_RETURN_IF_ERROR(half_->release_all());      // expansions of the old weights
  return half_->parameters().write(0, master_);  // rounded to the 16-bit type
}

void DataParallelStrategy::zero_gradients() {
  if (!half_) return model_->zero_gradients();
  const Status s = half_->zero_gradients();
  ZT_CHECK(s.ok(), s.to_string());
  step_grads_ = {};
  grads_ = {};
  model_->return_activation_memory();
}

Status DataParallelStrategy::gather_full_parameters(std::span<float> out) {
  const auto n = static_cast<size_t>(model_->layout().total_numel());
  if (out.size() != n)
    return invalid_argument("gather_full_parameters: needs " + std::to_string(n) + " floats, got " +
                            std::to_string(out.size()));
  if (half_) return half_->parameters().read(0, Tensor(out));
  return device::copy_to_host(params_, out.data());
}

ModelStateBytes DataParallelStrategy::model_state_bytes() const {
  ModelStateBytes b;
  if (half_) {
    b.parameters = half_->parameters().size_bytes();
    b.gradients = half_->gradients().size_bytes();
    b.buffers = half_->buffer_bytes() + static_cast<int64_t>(step_grads_.bytes());
  } else {
    b.parameters = static_cast<int64_t>(params_.size_bytes());
    b.gradients = static_cast<int64_t>(grads_.size_bytes());
  }
  b.master_weights = static_cast<int64_t>(own_master_.bytes());
  for (const auto& s : states_) b.optimizer_states += static_cast<int64_t>(s.bytes());
  return b;
}

}  // namespace zerotrain::zero
