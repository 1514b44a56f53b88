// GptModel plumbing: creation, buffer binding, hooks, pass sequencing and
// memory accounting. The per-stage math is in gpt_forward.cc and
// gpt_backward.cc.
#include "model/gpt_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "model/init.h"

namespace zerotrain::model {

namespace {

// Elements of the bf16 operand scratch: weight (largest: the lm head's
// wte or c_fc), input (up to [B,T,4C]), output gradient (up to [B,T,4C],
// or a head chunk's [rows,Vp]).
struct Bf16Scratch {
  int64_t weight, input, dout;
};
int64_t weight_scratch(const GptConfig& cfg) {
  return std::max(cfg.padded_vocab, 4 * cfg.n_embd) * cfg.n_embd;
}
Bf16Scratch bf16_scratch(const GptConfig& cfg, int64_t B, int64_t T, int64_t head_rows) {
  const int64_t C = cfg.n_embd;
  return {weight_scratch(cfg), B * T * 4 * C,
          std::max(B * T * 4 * C, head_rows * cfg.padded_vocab)};
}

// Rows of the logits array: all of B·T with full_logits, else a chunk.
int64_t logits_rows(const GptConfig& cfg, int64_t B, int64_t T, bool full_logits,
                    int64_t requested) {
  return full_logits ? B * T : head_chunk_rows(cfg, B * T, requested);
}

}  // namespace

GptModel::GptModel(const GptConfig& cfg, const GptModelOptions& options)
    : cfg_(cfg),
      options_(options),
      layout_(cfg),
      param_base_(static_cast<size_t>(layout_.num_groups()), nullptr),
      grad_base_(static_cast<size_t>(layout_.num_groups()), nullptr),
      param16_base_(static_cast<size_t>(layout_.num_groups()), nullptr) {}

StatusOr<GptModel> GptModel::create(const GptConfig& cfg, const GptModelOptions& options) {
  ZT_RETURN_IF_ERROR(validate(cfg));
  GptModelOptions opts = options;
  if (opts.max_seq == 0) opts.max_seq = cfg.seq_len;
  if (opts.max_batch < 1) {
    return invalid_argument("GptModelOptions.max_batch must be >= 1, got " +
                            std::to_string(opts.max_batch));
  }
  if (opts.max_seq < 1 || opts.max_seq > cfg.seq_len) {
    return invalid_argument("GptModelOptions.max_seq must be in [1, seq_len=" +
                            std::to_string(cfg.seq_len) + "], got " + std::to_string(opts.max_seq));
  }
  GptModel m(cfg, opts);
  const auto n = static_cast<size_t>(m.layout_.total_numel());
  if (opts.own_parameters) {
    ZT_ASSIGN_OR_RETURN(m.own_params_, device::cpu::AlignedBuffer<float>::allocate(n));
  }
  if (opts.own_gradients) {
    ZT_ASSIGN_OR_RETURN(m.own_grads_, device::cpu::AlignedBuffer<float>::allocate(n));
  }
  const bool lse = opts.recompute_attention;
  const int64_t head_rows =
      logits_rows(cfg, opts.max_batch, opts.max_seq, opts.full_logits, opts.head_rows);
  const bool bf16 = opts.bf16_compute;
  const int64_t acts =
      m.acts_.plan(cfg, opts.max_batch, opts.max_seq, lse, head_rows, bf16, nullptr);
  ZT_ASSIGN_OR_RETURN(m.act_buffer_,
                      device::cpu::AlignedBuffer<float>::allocate(static_cast<size_t>(acts)));
  m.acts_.plan(cfg, opts.max_batch, opts.max_seq, lse, head_rows, bf16, m.act_buffer_.data());
  if (opts.bf16_compute) {
    const Bf16Scratch n16 = bf16_scratch(cfg, opts.max_batch, opts.max_seq, head_rows);
    using Buf16 = device::cpu::AlignedBuffer<BFloat16>;
    ZT_ASSIGN_OR_RETURN(m.w16_, Buf16::allocate(static_cast<size_t>(n16.weight)));
    ZT_ASSIGN_OR_RETURN(m.x16_, Buf16::allocate(static_cast<size_t>(n16.input)));
    ZT_ASSIGN_OR_RETURN(m.d16_, Buf16::allocate(static_cast<size_t>(n16.dout)));
  }
  m.set_parameters(nullptr);
  m.set_gradients(nullptr);
  return m;
}

void GptModel::set_parameters(float* flat) {
  flat_params_ = flat != nullptr ? flat : (own_params_.empty() ? nullptr : own_params_.data());
  for (const GroupInfo& gi : layout_.groups()) {
    param_base_[gi.index] = flat_params_ != nullptr ? flat_params_ + gi.offset : nullptr;
  }
}

void GptModel::set_gradients(float* flat) {
  flat_grads_ = flat != nullptr ? flat : (own_grads_.empty() ? nullptr : own_grads_.data());
  for (const GroupInfo& gi : layout_.groups()) {
    grad_base_[gi.index] = flat_grads_ != nullptr ? flat_grads_ + gi.offset : nullptr;
  }
}

void GptModel::set_group_parameters(int g, float* base) {
  ZT_CHECK(g >= 0 && g < num_groups(), "group ", g, " out of range");
  param_base_[g] = base;
  flat_params_ = nullptr;
}

void GptModel::set_group_gradients(int g, float* base) {
  ZT_CHECK(g >= 0 && g < num_groups(), "group ", g, " out of range");
  grad_base_[g] = base;
  flat_grads_ = nullptr;
}

Status GptModel::set_group_parameters_bf16(int g, const BFloat16* base) {
  ZT_CHECK(g >= 0 && g < num_groups(), "group ", g, " out of range");
  if (!options_.bf16_compute)
    return invalid_argument("set_group_parameters_bf16: the model was made without bf16_compute");
  param16_base_[g] = base;
  const bool all = std::all_of(param16_base_.begin(), param16_base_.end(),
                               [](const BFloat16* b) { return b != nullptr; });
  if (all) {
    w16_ = {};  // every GEMM weight has its view
  } else if (w16_.empty()) {
    ZT_ASSIGN_OR_RETURN(w16_, device::cpu::AlignedBuffer<BFloat16>::allocate(
                                  static_cast<size_t>(weight_scratch(cfg_))));
  }
  return ok_status();
}

void GptModel::release_owned_buffers() {
  own_params_ = {};
  own_grads_ = {};
  set_parameters(nullptr);
  set_gradients(nullptr);
}

void GptModel::init_parameters(uint64_t seed) {
  for (const GroupInfo& gi : layout_.groups()) {
    ZT_CHECK(param_base_[gi.index] != nullptr, "init_parameters: group ", gi.name, " unbound");
    init_parameter_range(layout_, seed, gi.offset, gi.offset + gi.numel, param_base_[gi.index]);
  }
}

void GptModel::zero_gradients() {
  for (const GroupInfo& gi : layout_.groups()) {
    ZT_CHECK(grad_base_[gi.index] != nullptr, "zero_gradients: group ", gi.name, " unbound");
    std::memset(grad_base_[gi.index], 0, static_cast<size_t>(gi.numel) * sizeof(float));
  }
}

const float* GptModel::p(const TensorInfo& t) const {
  return param_base_[t.group] + (t.offset - layout_.groups()[t.group].offset);
}

float* GptModel::g(const TensorInfo& t) const {
  return grad_base_[t.group] + (t.offset - layout_.groups()[t.group].offset);
}

std::vector<int> GptModel::param_groups_read(int stage, Pass pass) const {
  if (stage == 0) return pass == Pass::kForward ? std::vector<int>{0} : std::vector<int>{};
  if (stage == num_groups() - 1) return {stage, 0};
  return {stage};
}

std::vector<int> GptModel::grad_groups_written(int stage) const {
  if (stage == num_groups() - 1) return {stage, 0};
  return {stage};
}

Status GptModel::run_hook(const std::function<Status(int)>& hook, int g) const {
  if (!hook) return ok_status();
  Status s = hook(g);
  if (!s.ok()) return s.with_context("group hook for group " + std::to_string(g));
  return s;
}

Status GptModel::check_bound(int stage, Pass pass) const {
  for (int gi : param_groups_read(stage, pass)) {
    if (param_base_[gi] == nullptr) {
      return invalid_argument("group " + std::to_string(gi) + " (" + layout_.groups()[gi].name +
                              ") has no parameter buffer; bind one with set_parameters or "
                              "set_group_parameters");
    }
  }
  if (pass == Pass::kForward) return ok_status();
  for (int gi : grad_groups_written(stage)) {
    if (grad_base_[gi] == nullptr) {
      return invalid_argument("group " + std::to_string(gi) + " (" + layout_.groups()[gi].name +
                              ") has no gradient buffer; bind one with set_gradients or "
                              "set_group_gradients");
    }
  }
  return ok_status();
}

float* GptModel::lend_activation_memory(int64_t n) {
  if (n < 0 || static_cast<size_t>(n) > act_buffer_.size()) return nullptr;
  backward_ready_ = false;
  activations_lent_ = true;
  return act_buffer_.data();
}

StatusOr<float> GptModel::forward(const int32_t* tokens, const int32_t* targets, int64_t B,
                                  int64_t T, bool for_backward) {
  if (activations_lent_) {
    return invalid_argument(
        "forward: the activation memory is lent out (a boundary step's transient); the "
        "optimizer step returns it");
  }
  backward_ready_ = false;
  if (targets == nullptr && !options_.full_logits)
    return invalid_argument("forward without targets (inference) needs GptModelOptions.full_logits");
  if (B < 1 || B > options_.max_batch || T < 1 || T > options_.max_seq) {
    return invalid_argument(
        "forward: B=" + std::to_string(B) + ", T=" + std::to_string(T) +
        " outside the model's 1..max_batch=" + std::to_string(options_.max_batch) +
        ", 1..max_seq=" + std::to_string(options_.max_seq));
  }
  B_ = B, T_ = T;
  tokens_.assign(tokens, tokens + B * T);
  valid_targets_ = 0;
  if (targets != nullptr) {
    targets_.assign(targets, targets + B * T);
  } else {
    targets_.clear();
  }
  // One pass: count the targets that count, refuse one outside the
  // vocabulary here (the head sees them a chunk at a time).
  for (int64_t i = 0; i < static_cast<int64_t>(targets_.size()); ++i) {
    valid_targets_ += targets_[i] >= 0 ? 1 : 0;
    if (targets_[i] >= cfg_.vocab_size) {
      return invalid_argument("forward: target " + std::to_string(targets_[i]) + " at (b=" +
                              std::to_string(i / T) + ", t=" + std::to_string(i % T) +
                              ") is outside the vocabulary [0, " +
                              std::to_string(cfg_.vocab_size) + ")");
    }
  }
  for_backward_ = targets != nullptr && for_backward;
  // The head's backward in the forward uses d(mean)/d(token loss) = 1/valid;
  // backward(dloss) scales its results by dloss.
  unit_dloss_ = valid_targets_ > 0 ? 1.0f / static_cast<float>(valid_targets_) : 0.0f;
  const int last = num_groups() - 1;
  for (int s = 0; s <= last; ++s) {
    ZT_RETURN_IF_ERROR(run_hook(hooks_.before_forward, s));
    ZT_RETURN_IF_ERROR(check_bound(s, Pass::kForward));
    if (s == 0) {
      ZT_RETURN_IF_ERROR(forward_encoder());
    } else if (s == last) {
      ZT_RETURN_IF_ERROR(forward_head());
    } else {
      ZT_RETURN_IF_ERROR(forward_block(s - 1));
    }
    ZT_RETURN_IF_ERROR(run_hook(hooks_.after_forward, s));
  }
  if (targets == nullptr) return std::numeric_limits<float>::quiet_NaN();
  double sum = 0.0;  // double: the mean is exact to fp32 for any B·T
  for (int64_t i = 0; i < B * T; ++i) {
    if (targets_[i] >= 0) sum += acts_.losses[i];
  }
  backward_ready_ = for_backward_;
  return valid_targets_ > 0 ? static_cast<float>(sum / static_cast<double>(valid_targets_)) : 0.0f;
}

Status GptModel::backward(float dloss) {
  if (!backward_ready_) {
    return invalid_argument(
        "backward: needs a forward with targets (for backward) since the last backward");
  }
  backward_ready_ = false;
  dloss_ = dloss;
  const int last = num_groups() - 1;
  for (int s = last; s >= 0; --s) {
    ZT_RETURN_IF_ERROR(run_hook(hooks_.before_backward, s));
    ZT_RETURN_IF_ERROR(check_bound(s, Pass::kBackward));
    if (s == last) {
      ZT_RETURN_IF_ERROR(backward_head());
    } else if (s == 0) {
      backward_encoder();
    } else {
      ZT_RETURN_IF_ERROR(backward_block(s - 1));
    }
    ZT_RETURN_IF_ERROR(run_hook(hooks_.after_backward, s));
  }
  return ok_status();
}

std::span<const float> GptModel::losses() const {
  return {acts_.losses, static_cast<size_t>(B_ * T_)};
}

int64_t GptModel::activation_bytes(const GptConfig& cfg, int64_t B, int64_t T, bool bf16_compute,
                                   bool recompute_attention, bool full_logits,
                                   int64_t head_rows) {
  Activations a;
  const int64_t rows = logits_rows(cfg, B, T, full_logits, head_rows);
  int64_t bytes =
      a.plan(cfg, B, T, recompute_attention, rows, bf16_compute, nullptr) *
      static_cast<int64_t>(sizeof(float));
  if (bf16_compute) {
    const Bf16Scratch n16 = bf16_scratch(cfg, B, T, rows);
    bytes += 2 * (n16.weight + n16.input + n16.dout);
  }
  return bytes;
}

MemoryStats GptModel::memory() const {
  return {.parameter_bytes = static_cast<int64_t>(own_params_.size_bytes()),
          .gradient_bytes = static_cast<int64_t>(own_grads_.size_bytes()),
          .activation_bytes = static_cast<int64_t>(act_buffer_.size_bytes() + w16_.size_bytes() +
                                                   x16_.size_bytes() + d16_.size_bytes()),
          .layout_bytes = layout_.total_bytes()};
}

}  // namespace zerotrain::model
