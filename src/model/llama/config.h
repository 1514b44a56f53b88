// LlamaConfig: the shape and semantics of a Llama-family decoder as Hugging
// Face's config.json holds it, for model_type "llama", "mistral" and
// "qwen2" (the same architecture: RMSNorm, rotary embeddings, SwiGLU MLP,
// grouped-query attention; Qwen2 adds q/k/v biases, Mistral a sliding
// window), named presets, validation and the exact parameter count.
//
//   ZT_ASSIGN_OR_RETURN(LlamaConfig cfg, from_json(config_json));   // HF config.json
//   int64_t n = parameter_count(cfg);                               // as HF counts
//   nlohmann::json j = to_json(cfg);                                // round-trips
//
// Keys HF has that change nothing here (architectures, torch_dtype,
// bos/eos ids, use_cache, ...) are kept verbatim in `extra` and written
// back by to_json, so an export's config.json is the import's. Keys that
// would change the math and are not implemented (hidden_act other than
// silu, mlp_bias, rope_scaling types other than default/linear/llama3, a
// head_dim other than hidden_size / num_attention_heads, dropout) are
// refused naming the key.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace zerotrain::model::llama {

struct RopeScaling {
  std::string type = "default";  // "default", "linear" or "llama3"
  double factor = 1.0;
  // llama3 only:
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

struct LlamaConfig {
  std::string model_type = "llama";  // "llama", "mistral" or "qwen2"
  int64_t vocab_size = 0;            // V
  int64_t padded_vocab = 0;          // Vp >= V: rows of the embedding and lm head here
  int64_t hidden_size = 0;           // C
  int64_t intermediate_size = 0;     // I, the MLP's width
  int64_t num_layers = 0;            // L (num_hidden_layers)
  int64_t num_heads = 0;             // NH (num_attention_heads)
  int64_t num_kv_heads = 0;          // NKV (num_key_value_heads), divides NH
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;       // q/k/v projections have biases (qwen2; llama attention_bias)
  bool o_bias = false;         // o_proj has a bias (llama attention_bias)
  int64_t sliding_window = 0;  // 0: none; else windowed layers attend to the last W positions
  // Layers from this one on are windowed: 0 for Mistral, Qwen2's max_window_layers.
  int64_t window_from_layer = 0;
  nlohmann::json extra = nlohmann::json::object();  // HF keys kept verbatim

  int64_t head_dim() const { return hidden_size / num_heads; }
  // Whether layer l attends through the sliding window (HF's "sliding_attention").
  bool windowed(int64_t l) const { return sliding_window > 0 && l >= window_from_layer; }
  int64_t kv_dim() const { return num_kv_heads * head_dim(); }
};

// InvalidArgument naming the field.
Status validate(const LlamaConfig& cfg);
// Parameters as HF's LlamaForCausalLM counts them (real vocabulary; a tied
// lm head counted once).
int64_t parameter_count(const LlamaConfig& cfg);

// The HF config.json form (with "padded_vocab_size", ours) and back. A
// missing num_key_value_heads is num_attention_heads, rope_theta 10000,
// rms_norm_eps 1e-6, tie_word_embeddings false, as HF's defaults.
nlohmann::json to_json(const LlamaConfig& cfg);
StatusOr<LlamaConfig> from_json(const nlohmann::json& j);

struct PresetInfo {
  std::string name;
  nlohmann::json config;  // HF form
  std::string description;
};
// Presets of one model_type ("llama", "mistral", "qwen2"), smallest first.
std::vector<PresetInfo> presets_of(std::string_view model_type);

}  // namespace zerotrain::model::llama
