// LlamaModel plumbing: creation, the pass trace, input preparation, the
// loss readout and the profiler's cost. The per-stage math is in
// llama_stages.cc.
#include "model/llama/llama_model.h"

#include <algorithm>
#include <limits>
#include <string>

#include "model/init_normal.h"
#include "model/llama/rope.h"

namespace zerotrain::model::llama {
namespace {

int64_t logits_rows(const LlamaConfig& cfg, int64_t B, int64_t T, bool full_logits,
                    int64_t requested) {
  return full_logits ? B * T : head_chunk_rows(cfg, B * T, requested);
}

std::string causal_lm_type(const LlamaConfig& cfg) {
  if (cfg.model_type == "mistral") return "MistralForCausalLM";
  if (cfg.model_type == "qwen2") return "Qwen2ForCausalLM";
  return "LlamaForCausalLM";
}

}  // namespace

LlamaModel::LlamaModel(const LlamaConfig& cfg, const ModuleOptions& options)
    : Module(make_layout(cfg), options), cfg_(cfg), slots_(block_slots(cfg)) {
  set_attention_window(cfg.sliding_window);
}

StatusOr<LlamaModel> LlamaModel::create(const LlamaConfig& cfg, const ModuleOptions& options) {
  ZT_RETURN_IF_ERROR(validate(cfg));
  ModuleOptions opts = options;
  const std::string who = cfg.model_type + ": ";
  if (opts.max_seq == 0) opts.max_seq = cfg.max_position_embeddings;
  if (opts.max_batch < 1)
    return invalid_argument(who + "max_batch must be >= 1, got " + std::to_string(opts.max_batch));
  if (opts.max_seq < 1 || opts.max_seq > cfg.max_position_embeddings)
    return invalid_argument(who + "the sequence length must be in [1, max_position_embeddings=" +
                            std::to_string(cfg.max_position_embeddings) + "], got " +
                            std::to_string(opts.max_seq));
  LlamaModel m(cfg, opts);
  m.bf16_acts_ = opts.bf16_compute && opts.lora == nullptr;
  const int64_t rows =
      logits_rows(cfg, opts.max_batch, opts.max_seq, opts.full_logits, opts.head_rows);
  const int64_t floats = m.acts_.plan(cfg, opts.max_batch, opts.max_seq, rows,
                                      opts.checkpoint_layers, m.bf16_acts_, nullptr);
  ZT_RETURN_IF_ERROR(m.allocate(floats));
  m.acts_.plan(cfg, opts.max_batch, opts.max_seq, rows, opts.checkpoint_layers, m.bf16_acts_,
               m.activation_memory());
  const RopeTables rope = rope_tables(cfg, opts.max_seq);
  ZT_ASSIGN_OR_RETURN(m.rope_, m.device().allocate(2 * rope.cos.size() * sizeof(float),
                                                   device::MemoryCategory::kActivations,
                                                   "rope tables"));
  m.acts_.rope_cos = m.rope_.as<float>();
  m.acts_.rope_sin = m.acts_.rope_cos + rope.cos.size();
  ZT_RETURN_IF_ERROR(
      m.device().copy(m.acts_.rope_cos, rope.cos.data(), rope.cos.size() * sizeof(float)));
  ZT_RETURN_IF_ERROR(
      m.device().copy(m.acts_.rope_sin, rope.sin.data(), rope.sin.size() * sizeof(float)));
  ZT_RETURN_IF_ERROR(m.allocate_bf16_scratch());
  return m;
}

int64_t LlamaModel::activation_bytes(const LlamaConfig& cfg, int64_t B, int64_t T, bool full_logits,
                                     int64_t head_rows, bool checkpoint, bool bf16_compute,
                                     bool adapters) {
  Activations a;
  const int64_t rows = logits_rows(cfg, B, T, full_logits, head_rows);
  const bool bf16_acts = bf16_compute && !adapters;
  int64_t bytes = a.plan(cfg, B, T, rows, checkpoint, bf16_acts, nullptr) *
                  static_cast<int64_t>(sizeof(float));
  bytes += 2 * T * (cfg.head_dim() / 2) * static_cast<int64_t>(sizeof(float));  // rope_
  if (bf16_compute) {
    const Bf16Scratch n = bf16_scratch(cfg, B, T, rows, bf16_acts);
    bytes += 2 * (n.weight + n.input + n.dout);
  }
  return bytes;
}

void LlamaModel::init_base_range(uint64_t seed, int64_t begin, int64_t end, float* host) const {
  // HF's _init_weights: Linear and Embedding normal(0, initializer_range),
  // biases 0, RMSNorm weights 1; no residual scaling.
  double std = 0.02;
  if (cfg_.extra.contains("initializer_range") && cfg_.extra["initializer_range"].is_number())
    std = cfg_.extra["initializer_range"].get<double>();
  init_flat_range(base_layout(), seed, begin, end, host, [std](const TensorInfo& t) {
    return t.kind == ParamKind::kLinearBias ? 0.0 : std;
  });
}

const float* LlamaModel::p(const TensorInfo& t) const { return param(t); }

float* LlamaModel::g(const TensorInfo& t) const { return grad(t); }

Status LlamaModel::zero(float* ptr, int64_t n) {
  return device().fill_zero(ptr, static_cast<size_t>(n) * sizeof(float));
}

const TensorInfo& LlamaModel::head_weight() const {
  return cfg_.tie_word_embeddings ? base_layout().tensors().front()
                                  : base_layout().tensors().back();
}

const TensorInfo& LlamaModel::block(int64_t l, int slot) const {
  return base_layout().group_tensor(static_cast<int>(l) + 1, slot);
}

const TensorInfo* LlamaModel::block_bias(int64_t l, int slot) const {
  return slot < 0 ? nullptr : &block(l, slot);
}

const float* LlamaModel::input_of(int64_t l) const {
  return l == 0 ? acts_.encoded : acts_.layers[static_cast<size_t>(l) - 1].res3;
}

std::vector<int> LlamaModel::param_groups_read(int stage, Pass pass) const {
  if (stage == 0) return pass == Pass::kForward ? std::vector<int>{0} : std::vector<int>{};
  if (stage == num_groups() - 1 && cfg_.tie_word_embeddings) return {stage, 0};
  return {stage};
}

std::vector<int> LlamaModel::grad_groups_written(int stage) const {
  if (stage == num_groups() - 1 && cfg_.tie_word_embeddings) return {stage, 0};
  return {stage};
}

Status LlamaModel::begin_forward(const int32_t* tokens, const int32_t* targets, int64_t B,
                                 int64_t T, bool for_backward) {
  B_ = B, T_ = T;
  const size_t n = static_cast<size_t>(B * T);
  has_targets_ = targets != nullptr;
  if (!has_targets_ && acts_.head_rows < B * T)
    return invalid_argument(cfg_.model_type +
                            ": a forward without targets needs the full_logits option");
  ZT_RETURN_IF_ERROR(device().copy(acts_.tokens, tokens, n * sizeof(int32_t)));
  valid_targets_ = 0;
  targets_.clear();
  if (has_targets_) {
    targets_.assign(targets, targets + n);
    ZT_ASSIGN_OR_RETURN(valid_targets_, count_targets(targets, B * T, T, cfg_.vocab_size));
    ZT_RETURN_IF_ERROR(device().copy(acts_.targets, targets, n * sizeof(int32_t)));
  }
  for_backward_ = has_targets_ && for_backward;
  unit_dloss_ = valid_targets_ > 0 ? 1.0f / static_cast<float>(valid_targets_) : 0.0f;
  return ok_status();
}

Status LlamaModel::forward_stage(int s) {
  if (s == 0) return forward_embed();
  if (s == num_groups() - 1) return forward_head();
  return bf16_acts_ ? forward_block_bf16(s - 1) : forward_block(s - 1);
}

Status LlamaModel::backward_stage(int s) {
  if (s == num_groups() - 1) return backward_head();
  if (s == 0) return backward_embed();
  return bf16_acts_ ? backward_block_bf16(s - 1) : backward_block(s - 1);
}

StatusOr<float> LlamaModel::finish_forward() {
  losses_.resize(static_cast<size_t>(B_ * T_));
  if (!has_targets_) {
    std::fill(losses_.begin(), losses_.end(), 0.0f);
    return std::numeric_limits<float>::quiet_NaN();
  }
  ZT_RETURN_IF_ERROR(device().copy(losses_.data(), acts_.losses, losses_.size() * sizeof(float)));
  return mean_loss(losses_, targets_, valid_targets_);
}

ModelCost LlamaModel::cost(int64_t B, int64_t T) const {
  const int64_t C = cfg_.hidden_size, KC = cfg_.kv_dim(), I = cfg_.intermediate_size,
                V = cfg_.vocab_size, BT = B * T;
  const std::string prefix = cfg_.model_type == "qwen2"     ? "Qwen2"
                             : cfg_.model_type == "mistral" ? "Mistral"
                                                            : "Llama";
  ModelCost c{.type = causal_lm_type(cfg_), .stages = {}};
  c.stages.push_back(
      {.name = "model.embed_tokens", .type = "Embedding", .params = V * C, .macs = 0});
  const int64_t layer_params = 2 * C * C + 2 * KC * C + 3 * C * I + 2 * C +
                               (cfg_.qkv_bias ? C + 2 * KC : 0) + (cfg_.o_bias ? C : 0);
  for (int64_t l = 0; l < cfg_.num_layers; ++l)
    // q, o: C² each; k, v: KC·C each; gate, up, down: C·I each, per token;
    // Q·Kᵀ and att·V over the full T×T, B·T·T·C each (as DeepSpeed counts).
    c.stages.push_back({.name = "model.layers." + std::to_string(l),
                        .type = prefix + "DecoderLayer",
                        .params = layer_params,
                        .macs = BT * (2 * C * C + 2 * KC * C + 3 * C * I) + 2 * B * T * T * C});
  c.stages.push_back({.name = "model.norm+lm_head",
                      .type = prefix + "RMSNorm+Linear",
                      .params = C + (cfg_.tie_word_embeddings ? 0 : V * C),
                      .macs = BT * C * cfg_.padded_vocab});
  return c;
}

}  // namespace zerotrain::model::llama
