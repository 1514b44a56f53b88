// HalfComputeCopy: per-stage fp32 expansion of a 16-bit compute copy (see
// half_compute.h).
#include "zero/half_compute.h"

#include <string>

#include "zero/pass_trace.h"

namespace zerotrain::zero {

namespace {
using device::MemoryCategory;
}

StatusOr<std::unique_ptr<HalfComputeCopy>> HalfComputeCopy::create(const HalfComputeOptions& o,
                                                                   ConstTensor weights) {
  if (o.model == nullptr) return invalid_argument("HalfComputeCopy: a model is required");
  if (o.dtype != DType::kBFloat16 && o.dtype != DType::kFloat16)
    return invalid_argument("HalfComputeCopy: the dtype must be bf16 or fp16");
  model::Module& m = *o.model;
  const auto numel = static_cast<size_t>(m.layout().total_numel());
  if (weights.numel != numel)
    return invalid_argument("HalfComputeCopy: " + std::to_string(weights.numel) +
                            " weights for a model of " + std::to_string(numel));
  std::unique_ptr<HalfComputeCopy> h(new HalfComputeCopy(o));
  device::Device& d = m.device();
  h->pool_ = BufferPool(&d);
  ZT_ASSIGN_OR_RETURN(h->params_, PartitionArray::allocate(
                                      d, o.dtype, numel, {.category = MemoryCategory::kParameters},
                                      "16-bit compute copy"));
  ZT_RETURN_IF_ERROR(h->params_.write(0, weights));
  if (o.accumulate_gradients) {
    ZT_ASSIGN_OR_RETURN(h->grads_, PartitionArray::allocate(
                                       d, o.dtype, numel, {.category = MemoryCategory::kGradients},
                                       "16-bit gradient accumulator"));
  }
  std::vector<int64_t> group_numel;
  for (const auto& g : m.layout().groups()) group_numel.push_back(g.numel);
  // No prefetch (nothing to wait for), reuse only at distance 0.
  ZT_ASSIGN_OR_RETURN(h->coordinator_,
                      ParamCoordinator::create(pass_trace(m), std::move(group_numel),
                                               {.max_reuse_distance = 1}, h.get()));
  h->expanded_.resize(static_cast<size_t>(m.num_groups()));
  h->grad_buffers_.resize(static_cast<size_t>(m.num_groups()));
  m.release_owned_buffers();
  // The bf16 copy is what the model's bf16 GEMMs would round their fp32
  // expansions back to: they read it directly (and the model frees its
  // weight scratch).
  if (o.dtype == DType::kBFloat16 && m.bf16_compute()) {
    h->bf16_views_ = true;  // first: an error part-way still unbinds them all
    for (const auto& g : m.layout().groups()) {
      const Tensor view = h->params_.slice(static_cast<size_t>(g.offset), 0);
      ZT_RETURN_IF_ERROR(
          m.set_group_parameters_bf16(g.index, static_cast<const BFloat16*>(view.data)));
    }
  }
  return h;
}

HalfComputeCopy::~HalfComputeCopy() {
  model::Module& m = *options_.model;
  for (int g = 0; g < m.num_groups() && bf16_views_; ++g)
    (void)m.set_group_parameters_bf16(g, nullptr);  // a failed scratch allocation shows at use
  for (int g = 0; g < m.num_groups(); ++g) {
    if (!expanded_[static_cast<size_t>(g)].empty()) m.set_group_parameters(g, nullptr);
    if (!grad_buffers_[static_cast<size_t>(g)].empty()) m.set_group_gradients(g, nullptr);
  }
}

Status HalfComputeCopy::start_gather(int g) {
  const auto& gi = options_.model->layout().groups()[static_cast<size_t>(g)];
  device::Buffer& b = expanded_[static_cast<size_t>(g)];
  ZT_ASSIGN_OR_RETURN(b, pool_.acquire(static_cast<size_t>(gi.numel) * sizeof(float)));
  return params_.read(static_cast<size_t>(gi.offset), b.tensor(DType::kFloat32));
}

Status HalfComputeCopy::finish_gather(int g) {
  options_.model->set_group_parameters(g, expanded_[static_cast<size_t>(g)].as<float>());
  return Status();
}

void HalfComputeCopy::release(int g) {
  options_.model->set_group_parameters(g, nullptr);
  pool_.release(std::move(expanded_[static_cast<size_t>(g)]));
}

Status HalfComputeCopy::before_backward(int s) {
  model::Module& m = *options_.model;
  ZT_RETURN_IF_ERROR(coordinator_.before_step(backward_step(m, s)));
  if (!options_.accumulate_gradients) return Status();
  for (int g : m.grad_groups_written(s)) {
    device::Buffer& b = grad_buffers_[static_cast<size_t>(g)];
    if (!b.empty()) continue;  // group 0: bound since the head's stage
    const auto bytes = static_cast<size_t>(m.layout().groups()[static_cast<size_t>(g)].numel) *
                       sizeof(float);
    if (bytes == 0) continue;  // LoRA: a group with nothing trainable needs no binding
    ZT_ASSIGN_OR_RETURN(b, pool_.acquire(bytes));
    ZT_RETURN_IF_ERROR(m.device().fill_zero(b.data(), bytes));  // backward adds into it
    m.set_group_gradients(g, b.as<float>());
  }
  return Status();
}

Status HalfComputeCopy::after_backward(int s) {
  model::Module& m = *options_.model;
  if (options_.accumulate_gradients && m.layout().groups()[static_cast<size_t>(s)].numel > 0) {
    device::Buffer& b = grad_buffers_[static_cast<size_t>(s)];
    if (b.empty())
      return internal_error("16-bit gradients: group " + std::to_string(s) +
                            " has no gradient buffer (backward out of order)");
    const auto& gi = m.layout().groups()[static_cast<size_t>(s)];
    ZT_RETURN_IF_ERROR(grads_.add(static_cast<size_t>(gi.offset),
                                  b.tensor(DType::kFloat32, 0, static_cast<size_t>(gi.numel))));
    m.set_group_gradients(s, nullptr);
    pool_.release(std::move(b));
  }
  return coordinator_.after_step(backward_step(m, s));
}

Status HalfComputeCopy::zero_gradients() {
  if (!options_.accumulate_gradients) return Status();
  ZT_RETURN_IF_ERROR(grads_.fill_zero());
  for (size_t g = 0; g < grad_buffers_.size(); ++g) {
    if (grad_buffers_[g].empty()) continue;
    options_.model->set_group_gradients(static_cast<int>(g), nullptr);
    pool_.release(std::move(grad_buffers_[g]));
  }
  return Status();
}

}  // namespace zerotrain::zero
