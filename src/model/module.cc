// Module plumbing common to every family: buffer binding, hooks, pass
// sequencing, initialisation through host memory, activation lending.
#include "model/module.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>

#include "device/device.h"
#include "model/decoder.h"

namespace zerotrain::model {

Module::Module(ParamLayout layout, const ModuleOptions& options)
    : base_layout_(std::move(layout)),
      layout_(base_layout_),
      options_(options),
      device_(options.device != nullptr ? options.device : &device::default_device()),
      param_base_(static_cast<size_t>(layout_.num_groups()), nullptr),
      grad_base_(static_cast<size_t>(layout_.num_groups()), nullptr),
      param16_base_(static_cast<size_t>(layout_.num_groups()), nullptr) {
  options_.device = device_;
}

Module::Module(Module&&) noexcept = default;
Module::~Module() = default;

StatusOr<int64_t> Module::count_targets(const int32_t* targets, int64_t n, int64_t T, int64_t V) {
  int64_t valid = 0;
  for (int64_t i = 0; i < n; ++i) {
    valid += targets[i] >= 0 ? 1 : 0;
    if (targets[i] >= V) {
      return invalid_argument("forward: target " + std::to_string(targets[i]) +
                              " at (b=" + std::to_string(i / T) + ", t=" + std::to_string(i % T) +
                              ") is outside the vocabulary [0, " + std::to_string(V) + ")");
    }
  }
  return valid;
}

float Module::mean_loss(std::span<const float> losses, std::span<const int32_t> targets,
                        int64_t valid) {
  double sum = 0.0;
  for (size_t i = 0; i < losses.size(); ++i) {
    if (targets[i] >= 0) sum += losses[i];
  }
  return valid > 0 ? static_cast<float>(sum / static_cast<double>(valid)) : 0.0f;
}

StatusOr<std::unique_ptr<Decoder>> Module::make_decoder(int64_t, int64_t, DType) const {
  return invalid_argument("model family " + std::string(family()) + " has no generation decoder");
}

Status Module::check_parameters_bound(const char* what) const {
  for (int g = 0; g < num_groups(); ++g) {
    if (param_base_[g] == nullptr && layout_.groups()[g].numel > 0) {
      return invalid_argument(std::string(what) + ": the parameters of group " + std::to_string(g) +
                              " are not bound");
    }
  }
  return ok_status();
}

Status Module::allocate(int64_t activation_floats) {
  ZT_RETURN_IF_ERROR(allocate_adapters());
  const auto bytes = static_cast<size_t>(layout_.total_bytes());
  using device::MemoryCategory;
  if (options_.own_parameters) {
    ZT_ASSIGN_OR_RETURN(own_params_,
                        device_->allocate(bytes, MemoryCategory::kParameters, "model parameters"));
  }
  if (options_.own_gradients) {
    ZT_ASSIGN_OR_RETURN(own_grads_,
                        device_->allocate(bytes, MemoryCategory::kGradients, "model gradients"));
  }
  ZT_ASSIGN_OR_RETURN(act_buffer_,
                      device_->allocate(static_cast<size_t>(activation_floats) * sizeof(float),
                                        MemoryCategory::kActivations, "activations"));
  set_parameters(nullptr);
  set_gradients(nullptr);
  return ok_status();
}

void Module::set_parameters(float* flat) {
  flat_params_ = flat != nullptr ? flat : own_params_.as<float>();
  for (const GroupInfo& gi : layout_.groups())
    param_base_[gi.index] = flat_params_ != nullptr ? flat_params_ + gi.offset : nullptr;
}

void Module::set_gradients(float* flat) {
  flat_grads_ = flat != nullptr ? flat : own_grads_.as<float>();
  for (const GroupInfo& gi : layout_.groups())
    grad_base_[gi.index] = flat_grads_ != nullptr ? flat_grads_ + gi.offset : nullptr;
}

void Module::set_group_parameters(int g, float* base) {
  ZT_CHECK(g >= 0 && g < num_groups(), "group ", g, " out of range");
  param_base_[g] = base;
  flat_params_ = nullptr;
}

void Module::set_group_gradients(int g, float* base) {
  ZT_CHECK(g >= 0 && g < num_groups(), "group ", g, " out of range");
  grad_base_[g] = base;
  flat_grads_ = nullptr;
}

Status Module::set_group_parameters_bf16(int g, const BFloat16* base) {
  ZT_CHECK(g >= 0 && g < num_groups(), "group ", g, " out of range");
  if (!options_.bf16_compute)
    return invalid_argument("set_group_parameters_bf16: the model was made without bf16_compute");
  param16_base_[g] = base;
  return on_bf16_views(std::all_of(param16_base_.begin(), param16_base_.end(),
                                   [](const BFloat16* b) { return b != nullptr; }));
}

void Module::release_owned_buffers() {
  own_params_ = {};
  own_grads_ = {};
  set_parameters(nullptr);
  set_gradients(nullptr);
  for (device::Buffer& b : frozen_store_) b = {};
  std::fill(frozen_base_.begin(), frozen_base_.end(), nullptr);
}

Status Module::init_parameters(uint64_t seed) {
  ZT_RETURN_IF_ERROR(load_frozen([this, seed](int64_t offset, int64_t count, float* out) {
    init_base_range(seed, offset, offset + count, out);
    return ok_status();
  }));
  return load_parameters([this, seed](int64_t offset, int64_t count, float* out) {
    init_range(seed, offset, offset + count, out);
    return ok_status();
  });
}

Status Module::load_parameters(const ReadFlatFn& read) {
  std::vector<float> host;
  for (const GroupInfo& gi : layout_.groups()) {
    if (gi.numel == 0) continue;
    ZT_CHECK(param_base_[gi.index] != nullptr, "load_parameters: group ", gi.name, " unbound");
    host.resize(static_cast<size_t>(gi.numel));
    ZT_RETURN_IF_ERROR(read(gi.offset, gi.numel, host.data()));
    ZT_RETURN_IF_ERROR(
        device_->copy(param_base_[gi.index], host.data(), host.size() * sizeof(float)));
  }
  return ok_status();
}

void Module::zero_gradients() {
  for (const GroupInfo& gi : layout_.groups()) {
    if (gi.numel == 0) continue;
    ZT_CHECK(grad_base_[gi.index] != nullptr, "zero_gradients: group ", gi.name, " unbound");
    const Status s =
        device_->fill_zero(grad_base_[gi.index], static_cast<size_t>(gi.numel) * sizeof(float));
    ZT_CHECK(s.ok(), s.to_string());
  }
}

Status Module::run_hook(const std::function<Status(int)>& hook, int g) const {
  if (!hook) return ok_status();
  Status s = hook(g);
  if (!s.ok()) return s.with_context("group hook for group " + std::to_string(g));
  return s;
}

Status Module::check_bound(int stage, Pass pass) const {
  for (int gi : param_groups_read(stage, pass)) {
    if (param_base_[gi] == nullptr && layout_.groups()[gi].numel > 0) {
      return invalid_argument("group " + std::to_string(gi) + " (" + layout_.groups()[gi].name +
                              ") has no parameter buffer; bind one with set_parameters or "
                              "set_group_parameters");
    }
    if (adapters_ && frozen_base_[static_cast<size_t>(gi)] == nullptr && frozen_group_bytes(gi) > 0)
      return invalid_argument("group " + std::to_string(gi) + " (" + layout_.groups()[gi].name +
                              ") has no frozen base bound; load_frozen, or bind its block with "
                              "set_group_frozen");
  }
  if (pass == Pass::kForward) return ok_status();
  for (int gi : grad_groups_written(stage)) {
    if (grad_base_[gi] == nullptr && layout_.groups()[gi].numel > 0) {
      return invalid_argument("group " + std::to_string(gi) + " (" + layout_.groups()[gi].name +
                              ") has no gradient buffer; bind one with set_gradients or "
                              "set_group_gradients");
    }
  }
  return ok_status();
}

float* Module::lend_activation_memory(int64_t n) {
  if (n < 0 || static_cast<size_t>(n) * sizeof(float) > act_buffer_.bytes()) return nullptr;
  backward_ready_ = false;
  activations_lent_ = true;
  return act_buffer_.as<float>();
}

void Module::set_stage_timing(bool on) {
  stage_timing_ = on;
  stage_seconds_.assign(on ? num_groups() : 0, 0.0);
}

Status Module::set_doc_starts(const int32_t* doc_starts, int64_t B, int64_t T) {
  packed_ = false;
  windowed_ = false;
  if (doc_starts != nullptr) ZT_RETURN_IF_ERROR(set_packed_documents(doc_starts, B, T));
  if (attention_window_ <= 0 || T <= attention_window_) return ok_status();
  // Unpacked batches of one shape share one array: build it once.
  const std::pair<int64_t, int64_t> plain_shape{B, T};
  if (doc_starts == nullptr && window_shape_ == plain_shape) {
    windowed_ = true;
    return ok_status();
  }
  // Query t of a windowed layer sees keys max(its document's start, t-W+1) .. t.
  std::vector<int32_t> first(static_cast<size_t>(B * T));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      first[static_cast<size_t>(b * T + t)] = static_cast<int32_t>(
          std::max<int64_t>(doc_starts ? doc_starts[b * T + t] : 0, t - attention_window_ + 1));
  const size_t bytes = first.size() * sizeof(int32_t);
  if (window_first_.bytes() < bytes) {
    ZT_ASSIGN_OR_RETURN(window_first_,
                        device_->allocate(bytes, device::MemoryCategory::kActivations,
                                          "sliding-window first keys"));
  }
  ZT_RETURN_IF_ERROR(device_->copy(window_first_.data(), first.data(), bytes));
  window_shape_ = doc_starts ? std::pair<int64_t, int64_t>{0, 0} : plain_shape;
  windowed_ = true;
  return ok_status();
}

Status Module::set_packed_documents(const int32_t* doc_starts, int64_t B, int64_t T) {
  ZT_RETURN_IF_ERROR(supports_packed_documents());
  std::vector<int32_t> pos(static_cast<size_t>(B * T));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      const int32_t s = doc_starts[b * T + t];
      const int32_t before = t > 0 ? doc_starts[b * T + t - 1] : 0;
      if (s < 0 || s > t || (s != before && s != t)) {
        return invalid_argument("forward: doc_starts[" + std::to_string(b) + ", " +
                                std::to_string(t) + "] = " + std::to_string(s) +
                                " is neither the previous token's start nor t");
      }
      pos[static_cast<size_t>(b * T + t)] = static_cast<int32_t>(t - s);
    }
  }
  const size_t bytes = pos.size() * sizeof(int32_t);
  if (doc_first_.bytes() < bytes) {
    ZT_ASSIGN_OR_RETURN(doc_first_, device_->allocate(bytes, device::MemoryCategory::kActivations,
                                                      "packed-document starts"));
    ZT_ASSIGN_OR_RETURN(doc_pos_, device_->allocate(bytes, device::MemoryCategory::kActivations,
                                                    "packed-document positions"));
  }
  ZT_RETURN_IF_ERROR(device_->copy(doc_first_.data(), doc_starts, bytes));
  ZT_RETURN_IF_ERROR(device_->copy(doc_pos_.data(), pos.data(), bytes));
  packed_ = true;
  return ok_status();
}

StatusOr<float> Module::forward(const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T,
                                bool for_backward, const int32_t* doc_starts) {
  if (activations_lent_) {
    return invalid_argument(
        "forward: the activation memory is lent out (a boundary step's transient); the "
        "optimizer step returns it");
  }
  backward_ready_ = false;
  if (targets == nullptr && !options_.full_logits)
    return invalid_argument("forward without targets (inference) needs ModuleOptions.full_logits");
  if (B < 1 || B > options_.max_batch || T < 1 || T > options_.max_seq) {
    return invalid_argument(
        "forward: B=" + std::to_string(B) + ", T=" + std::to_string(T) +
        " outside the model's 1..max_batch=" + std::to_string(options_.max_batch) +
        ", 1..max_seq=" + std::to_string(options_.max_seq));
  }
  ZT_RETURN_IF_ERROR(set_doc_starts(doc_starts, B, T));
  ZT_RETURN_IF_ERROR(begin_forward(tokens, targets, B, T, for_backward));
  for (int s = 0; s < num_groups(); ++s) {
    ZT_RETURN_IF_ERROR(run_hook(hooks_.before_forward, s));
    ZT_RETURN_IF_ERROR(check_bound(s, Pass::kForward));
    if (stage_timing_) {
      ZT_RETURN_IF_ERROR(device_->synchronize());
      const auto t0 = std::chrono::steady_clock::now();
      ZT_RETURN_IF_ERROR(forward_stage(s));
      ZT_RETURN_IF_ERROR(device_->synchronize());
      stage_seconds_[s] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } else {
      ZT_RETURN_IF_ERROR(forward_stage(s));
    }
    ZT_RETURN_IF_ERROR(run_hook(hooks_.after_forward, s));
  }
  if (targets == nullptr) return std::numeric_limits<float>::quiet_NaN();
  ZT_ASSIGN_OR_RETURN(float loss, finish_forward());
  backward_ready_ = for_backward;
  return loss;
}

Status Module::backward(float dloss) {
  if (!backward_ready_) {
    return invalid_argument(
        "backward: needs a forward with targets (for backward) since the last backward");
  }
  backward_ready_ = false;
  begin_backward(dloss);
  for (int s = num_groups() - 1; s >= 0; --s) {
    ZT_RETURN_IF_ERROR(run_hook(hooks_.before_backward, s));
    ZT_RETURN_IF_ERROR(check_bound(s, Pass::kBackward));
    if (options_.checkpoint_layers && checkpointable_stage(s)) {
      const auto t0 = std::chrono::steady_clock::now();
      ZT_RETURN_IF_ERROR(forward_stage(s));
      if (options_.checkpoint_synchronize) ZT_RETURN_IF_ERROR(device_->synchronize());
      recompute_seconds_ +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      ++recomputed_stages_;
    }
    ZT_RETURN_IF_ERROR(backward_stage(s));
    ZT_RETURN_IF_ERROR(run_hook(hooks_.after_backward, s));
  }
  return ok_status();
}

MemoryStats Module::memory() const {
  return {.parameter_bytes = static_cast<int64_t>(own_params_.bytes()),
          .gradient_bytes = static_cast<int64_t>(own_grads_.bytes()),
          .activation_bytes = static_cast<int64_t>(act_buffer_.bytes() + dequant_scratch_.bytes()) +
                              scratch_bytes(),
          .layout_bytes = layout_.total_bytes(),
          .frozen_bytes = frozen_bytes()};
}

}  // namespace zerotrain::model
