// GptModel plumbing: creation, the scratch buffers, the pass trace, input
// preparation and the loss readout. The per-stage math is in
// gpt_forward.cc, gpt_backward.cc and gpt_linear.cc.
#include "model/gpt2/gpt_model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/gpt2/init.h"

namespace zerotrain::model::gpt2 {

namespace {

using device::MemoryCategory;

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

GptModel::GptModel(const GptConfig& cfg, const ModuleOptions& options)
    : Module(make_layout(cfg), options), cfg_(cfg) {}

StatusOr<GptModel> GptModel::create(const GptConfig& cfg, const ModuleOptions& options) {
  ZT_RETURN_IF_ERROR(validate(cfg));
  ModuleOptions opts = options;
  if (opts.max_seq == 0) opts.max_seq = cfg.seq_len;
  if (opts.max_batch < 1) {
    return invalid_argument("GptModelOptions.max_batch must be >= 1, got " +
                            std::to_string(opts.max_batch));
  }
  if (opts.max_seq < 1 || opts.max_seq > cfg.seq_len) {
    return invalid_argument("GptModelOptions.max_seq must be in [1, seq_len=" +
                            std::to_string(cfg.seq_len) + "], got " + std::to_string(opts.max_seq));
  }
  if (opts.lora && opts.bf16_compute)
    return invalid_argument(
        "gpt2: LoRA adapters run in fp32 only for now (its bf16 path keeps bf16 activations the "
        "adapter GEMMs do not read yet); use the llama family, or fp32");
  GptModel m(cfg, opts);
  const int64_t head_rows =
      logits_rows(cfg, opts.max_batch, opts.max_seq, opts.full_logits, opts.head_rows);
  const int64_t acts = m.acts_.plan(cfg, opts.max_batch, opts.max_seq, opts.recompute_attention,
                                    head_rows, opts.bf16_compute, opts.checkpoint_layers, nullptr);
  ZT_RETURN_IF_ERROR(m.allocate(acts));
  m.acts_.plan(cfg, opts.max_batch, opts.max_seq, opts.recompute_attention, head_rows,
               opts.bf16_compute, opts.checkpoint_layers, m.activation_memory());
  ZT_RETURN_IF_ERROR(m.allocate_scratch());
  return m;
}

Status GptModel::allocate_scratch() {
  device::Device& d = device();
  const int64_t B = options().max_batch, T = options().max_seq;
  if (!bf16_compute()) return ok_status();
  const Bf16Scratch n16 = bf16_scratch(cfg_, B, T, acts_.head_rows);
  ZT_ASSIGN_OR_RETURN(w16_, d.allocate(static_cast<size_t>(n16.weight) * 2,
                                       MemoryCategory::kActivations, "bf16 weight scratch"));
  ZT_ASSIGN_OR_RETURN(x16_, d.allocate(static_cast<size_t>(n16.input) * 2,
                                       MemoryCategory::kActivations, "bf16 input scratch"));
  ZT_ASSIGN_OR_RETURN(d16_, d.allocate(static_cast<size_t>(n16.dout) * 2,
                                       MemoryCategory::kActivations, "bf16 gradient scratch"));
  return ok_status();
}

Status GptModel::on_bf16_views(bool all) {
  if (all) {
    w16_ = {};  // every GEMM weight has its view
  } else if (w16_.empty()) {
    ZT_ASSIGN_OR_RETURN(w16_,
                        device().allocate(static_cast<size_t>(weight_scratch(cfg_)) * 2,
                                          MemoryCategory::kActivations, "bf16 weight scratch"));
  }
  return ok_status();
}

void GptModel::init_base_range(uint64_t seed, int64_t begin, int64_t end, float* host) const {
  init_parameter_range(base_layout(), seed, begin, end, host);
}

Status GptModel::supports_packed_documents() const {
  if (bf16_compute() || !options().recompute_attention) {
    return invalid_argument(
        "packed documents: gpt2 runs them in fp32 with recompute_attention only (its bf16 "
        "attention and saved attention maps take no document starts yet)");
  }
  return ok_status();
}

const float* GptModel::p(const TensorInfo& t) const { return param(t); }

float* GptModel::g(const TensorInfo& t) const { return grad(t); }

Status GptModel::zero(float* ptr, int64_t n) {
  return device().fill_zero(ptr, static_cast<size_t>(n) * sizeof(float));
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

Status GptModel::begin_forward(const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T,
                               bool for_backward) {
  B_ = B, T_ = T;
  const size_t n = static_cast<size_t>(B * T);
  ZT_RETURN_IF_ERROR(device().copy(acts_.tokens, tokens, n * sizeof(int32_t)));
  valid_targets_ = 0;
  has_targets_ = targets != nullptr;
  if (has_targets_) {
    targets_.assign(targets, targets + n);
  } else {
    targets_.clear();
  }
  // Refused here: the head sees the targets a chunk at a time.
  ZT_ASSIGN_OR_RETURN(
      valid_targets_,
      count_targets(targets_.data(), static_cast<int64_t>(targets_.size()), T, cfg_.vocab_size));
  if (has_targets_) ZT_RETURN_IF_ERROR(device().copy(acts_.targets, targets, n * sizeof(int32_t)));
  for_backward_ = has_targets_ && for_backward;
  // The head's backward in the forward uses d(mean)/d(token loss) = 1/valid;
  // backward(dloss) scales its results by dloss.
  unit_dloss_ = valid_targets_ > 0 ? 1.0f / static_cast<float>(valid_targets_) : 0.0f;
  return ok_status();
}

ModelCost GptModel::cost(int64_t B, int64_t T) const {
  const int64_t C = cfg_.n_embd, BT = B * T;
  ModelCost c{.type = "GPT2LMHeadModel", .stages = {}};
  // wte and wpe are lookups; the tied lm head's GEMM is the last stage's.
  c.stages.push_back({.name = "transformer.wte+wpe",
                      .type = "Embedding",
                      .params = cfg_.vocab_size * C + cfg_.seq_len * C,
                      .macs = 0});
  for (int64_t l = 0; l < cfg_.n_layer; ++l)
    // c_attn 3C², attn.c_proj C², c_fc 4C², mlp.c_proj 4C² per token, and
    // Q·Kᵀ and att·V: B·NH·T·T·(C/NH) each.
    c.stages.push_back({.name = "transformer.h." + std::to_string(l),
                        .type = "GPT2Block",
                        .params = 12 * C * C + 13 * C,
                        .macs = 12 * BT * C * C + 2 * B * T * T * C});
  // The head's GEMM runs over the padded vocabulary.
  c.stages.push_back({.name = "transformer.ln_f+lm_head",
                      .type = "LayerNorm+Linear",
                      .params = 2 * C,
                      .macs = BT * C * cfg_.padded_vocab});
  return c;
}

Status GptModel::forward_stage(int s) {
  if (s == 0) return forward_encoder();
  if (s == num_groups() - 1) return forward_head();
  return forward_block(s - 1);
}

Status GptModel::backward_stage(int s) {
  if (s == num_groups() - 1) return backward_head();
  if (s == 0) return backward_encoder();
  return backward_block(s - 1);
}

StatusOr<float> GptModel::finish_forward() {
  losses_.resize(static_cast<size_t>(B_ * T_));
  ZT_RETURN_IF_ERROR(device().copy(losses_.data(), acts_.losses, losses_.size() * sizeof(float)));
  return mean_loss(losses_, targets_, valid_targets_);
}

int64_t GptModel::activation_bytes(const GptConfig& cfg, int64_t B, int64_t T, bool bf16_compute,
                                   bool recompute_attention, bool full_logits, int64_t head_rows,
                                   bool checkpoint) {
  Activations a;
  const int64_t rows = logits_rows(cfg, B, T, full_logits, head_rows);
  int64_t bytes = a.plan(cfg, B, T, recompute_attention, rows, bf16_compute, checkpoint, nullptr) *
                  static_cast<int64_t>(sizeof(float));
  if (bf16_compute) {
    const Bf16Scratch n16 = bf16_scratch(cfg, B, T, rows);
    bytes += 2 * (n16.weight + n16.input + n16.dout);
  }
  return bytes;
}

int64_t GptModel::scratch_bytes() const {
  return static_cast<int64_t>(w16_.bytes() + x16_.bytes() + d16_.bytes());
}

}  // namespace zerotrain::model::gpt2
