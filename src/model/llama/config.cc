// LlamaConfig parsing, validation, parameter count and presets.
#include "model/llama/config.h"

#include <set>

namespace zerotrain::model::llama {
namespace {

// Keys from_json reads (everything else goes to `extra`).
const std::set<std::string>& read_keys() {
  static const std::set<std::string> keys = {"model_type",
                                             "vocab_size",
                                             "padded_vocab_size",
                                             "hidden_size",
                                             "intermediate_size",
                                             "num_hidden_layers",
                                             "num_attention_heads",
                                             "num_key_value_heads",
                                             "head_dim",
                                             "max_position_embeddings",
                                             "rms_norm_eps",
                                             "rope_theta",
                                             "rope_scaling",
                                             "tie_word_embeddings",
                                             "attention_bias",
                                             "mlp_bias",
                                             "hidden_act",
                                             "attention_dropout",
                                             "sliding_window",
                                             "use_sliding_window"};
  return keys;
}

int64_t pad64(int64_t v) { return (v + 63) / 64 * 64; }

class Reader {
 public:
  Reader(const nlohmann::json& j, std::string prefix) : j_(j), prefix_(std::move(prefix)) {}
  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  Status integer(const char* key, int64_t* out, bool required = true) const {
    if (!has(key)) {
      return required ? invalid_argument(prefix_ + "missing \"" + key + "\"") : ok_status();
    }
    if (!j_[key].is_number_integer())
      return invalid_argument(prefix_ + "\"" + key + "\" must be an integer, got " +
                              j_[key].dump());
    *out = j_[key].get<int64_t>();
    return ok_status();
  }
  Status number(const char* key, double* out) const {
    if (!has(key)) return ok_status();
    if (!j_[key].is_number())
      return invalid_argument(prefix_ + "\"" + key + "\" must be a number, got " + j_[key].dump());
    *out = j_[key].get<double>();
    return ok_status();
  }
  Status boolean(const char* key, bool* out) const {
    if (!has(key)) return ok_status();
    if (!j_[key].is_boolean())
      return invalid_argument(prefix_ + "\"" + key + "\" must be true or false, got " +
                              j_[key].dump());
    *out = j_[key].get<bool>();
    return ok_status();
  }

 private:
  const nlohmann::json& j_;
  std::string prefix_;
};

Status read_rope_scaling(const nlohmann::json& j, RopeScaling* out) {
  if (j.is_null()) return ok_status();
  if (!j.is_object())
    return invalid_argument("llama config: \"rope_scaling\" must be an object or null, got " +
                            j.dump());
  const char* type_key = j.contains("rope_type") ? "rope_type" : "type";
  if (!j.contains(type_key) || !j[type_key].is_string())
    return invalid_argument("llama config: \"rope_scaling\" needs a \"rope_type\" string, got " +
                            j.dump());
  out->type = j[type_key].get<std::string>();
  if (out->type != "default" && out->type != "linear" && out->type != "llama3")
    return invalid_argument("llama config: rope_scaling type \"" + out->type +
                            "\" is not supported (supported: default, linear, llama3)");
  Reader r(j, "llama config: rope_scaling: ");
  ZT_RETURN_IF_ERROR(r.number("factor", &out->factor));
  ZT_RETURN_IF_ERROR(r.number("low_freq_factor", &out->low_freq_factor));
  ZT_RETURN_IF_ERROR(r.number("high_freq_factor", &out->high_freq_factor));
  ZT_RETURN_IF_ERROR(r.integer("original_max_position_embeddings",
                               &out->original_max_position_embeddings, out->type == "llama3"));
  if (out->type != "default" && !(out->factor > 0))
    return invalid_argument("llama config: rope_scaling \"factor\" must be > 0");
  if (out->type == "llama3" && !(out->high_freq_factor > out->low_freq_factor))
    return invalid_argument("llama config: rope_scaling needs high_freq_factor > low_freq_factor");
  return ok_status();
}

nlohmann::json rope_scaling_json(const RopeScaling& s) {
  if (s.type == "default") return nullptr;
  nlohmann::json j = {{"rope_type", s.type}, {"factor", s.factor}};
  if (s.type == "llama3") {
    j["low_freq_factor"] = s.low_freq_factor;
    j["high_freq_factor"] = s.high_freq_factor;
    j["original_max_position_embeddings"] = s.original_max_position_embeddings;
  }
  return j;
}

}  // namespace

Status validate(const LlamaConfig& c) {
  auto positive = [](int64_t v, const char* name) -> Status {
    if (v < 1)
      return invalid_argument(std::string("llama config: \"") + name + "\" must be >= 1, got " +
                              std::to_string(v));
    return ok_status();
  };
  if (c.model_type != "llama" && c.model_type != "mistral" && c.model_type != "qwen2")
    return invalid_argument("llama config: model_type \"" + c.model_type +
                            "\" is not one of llama, mistral, qwen2");
  ZT_RETURN_IF_ERROR(positive(c.vocab_size, "vocab_size"));
  ZT_RETURN_IF_ERROR(positive(c.hidden_size, "hidden_size"));
  ZT_RETURN_IF_ERROR(positive(c.intermediate_size, "intermediate_size"));
  ZT_RETURN_IF_ERROR(positive(c.num_layers, "num_hidden_layers"));
  ZT_RETURN_IF_ERROR(positive(c.num_heads, "num_attention_heads"));
  ZT_RETURN_IF_ERROR(positive(c.num_kv_heads, "num_key_value_heads"));
  ZT_RETURN_IF_ERROR(positive(c.max_position_embeddings, "max_position_embeddings"));
  if (c.hidden_size % c.num_heads != 0 || c.head_dim() % 2 != 0)
    return invalid_argument("llama config: hidden_size " + std::to_string(c.hidden_size) +
                            " must be num_attention_heads (" + std::to_string(c.num_heads) +
                            ") times an even head_dim");
  if (c.num_heads % c.num_kv_heads != 0)
    return invalid_argument("llama config: num_key_value_heads " + std::to_string(c.num_kv_heads) +
                            " must divide num_attention_heads " + std::to_string(c.num_heads));
  if (c.padded_vocab < c.vocab_size)
    return invalid_argument("llama config: padded_vocab_size " + std::to_string(c.padded_vocab) +
                            " < vocab_size " + std::to_string(c.vocab_size));
  if (!(c.rms_norm_eps > 0) || !(c.rope_theta > 0))
    return invalid_argument("llama config: rms_norm_eps and rope_theta must be > 0");
  if (c.sliding_window < 0)
    return invalid_argument("llama config: sliding_window must be >= 1 or null");
  return ok_status();
}

int64_t parameter_count(const LlamaConfig& c) {
  const int64_t C = c.hidden_size, I = c.intermediate_size, KC = c.kv_dim(), V = c.vocab_size;
  const int64_t attn =
      C * C + 2 * KC * C + C * C + (c.qkv_bias ? C + 2 * KC : 0) + (c.o_bias ? C : 0);
  const int64_t layer = attn + 3 * C * I + 2 * C;
  return V * C + c.num_layers * layer + C + (c.tie_word_embeddings ? 0 : V * C);
}

nlohmann::json to_json(const LlamaConfig& c) {
  nlohmann::json j = c.extra;
  j["model_type"] = c.model_type;
  j["vocab_size"] = c.vocab_size;
  j["padded_vocab_size"] = c.padded_vocab;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_layers;
  j["num_attention_heads"] = c.num_heads;
  j["num_key_value_heads"] = c.num_kv_heads;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["rope_scaling"] = rope_scaling_json(c.rope_scaling);
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["hidden_act"] = "silu";
  if (c.model_type == "llama") {
    j["attention_bias"] = c.o_bias;
    j["mlp_bias"] = false;
  }
  if (c.model_type == "mistral" || c.model_type == "qwen2") {
    j["sliding_window"] = c.sliding_window > 0 ? nlohmann::json(c.sliding_window) : nullptr;
  }
  if (c.model_type == "qwen2") j["use_sliding_window"] = c.sliding_window > 0;
  return j;
}

StatusOr<LlamaConfig> from_json(const nlohmann::json& j) {
  if (!j.is_object()) return invalid_argument("llama config: not a JSON object");
  LlamaConfig c;
  if (!j.contains("model_type") || !j["model_type"].is_string())
    return invalid_argument("llama config: missing \"model_type\"");
  c.model_type = j["model_type"].get<std::string>();
  Reader r(j, c.model_type + " config: ");
  ZT_RETURN_IF_ERROR(r.integer("vocab_size", &c.vocab_size));
  ZT_RETURN_IF_ERROR(r.integer("hidden_size", &c.hidden_size));
  ZT_RETURN_IF_ERROR(r.integer("intermediate_size", &c.intermediate_size));
  ZT_RETURN_IF_ERROR(r.integer("num_hidden_layers", &c.num_layers));
  ZT_RETURN_IF_ERROR(r.integer("num_attention_heads", &c.num_heads));
  c.num_kv_heads = c.num_heads;
  ZT_RETURN_IF_ERROR(r.integer("num_key_value_heads", &c.num_kv_heads, false));
  ZT_RETURN_IF_ERROR(r.integer("max_position_embeddings", &c.max_position_embeddings));
  c.padded_vocab = pad64(c.vocab_size);
  ZT_RETURN_IF_ERROR(r.integer("padded_vocab_size", &c.padded_vocab, false));
  ZT_RETURN_IF_ERROR(r.number("rms_norm_eps", &c.rms_norm_eps));
  ZT_RETURN_IF_ERROR(r.number("rope_theta", &c.rope_theta));
  ZT_RETURN_IF_ERROR(r.boolean("tie_word_embeddings", &c.tie_word_embeddings));
  if (j.contains("rope_scaling"))
    ZT_RETURN_IF_ERROR(read_rope_scaling(j["rope_scaling"], &c.rope_scaling));

  // What would change the math and is not implemented: refused, named.
  const std::string prefix = c.model_type + " config: ";
  if (r.has("hidden_act") && j["hidden_act"] != "silu")
    return invalid_argument(prefix + "hidden_act " + j["hidden_act"].dump() +
                            " is not supported (only \"silu\")");
  bool mlp_bias = false;
  ZT_RETURN_IF_ERROR(r.boolean("mlp_bias", &mlp_bias));
  if (mlp_bias) return invalid_argument(prefix + "mlp_bias true is not supported");
  double dropout = 0.0;
  ZT_RETURN_IF_ERROR(r.number("attention_dropout", &dropout));
  if (dropout != 0.0)
    return invalid_argument(prefix + "attention_dropout " + std::to_string(dropout) +
                            " is not supported (only 0)");
  if (r.has("head_dim")) {
    int64_t hd = 0;
    ZT_RETURN_IF_ERROR(r.integer("head_dim", &hd));
    if (c.num_heads > 0 && hd * c.num_heads != c.hidden_size)
      return invalid_argument(prefix + "head_dim " + std::to_string(hd) +
                              " != hidden_size / num_attention_heads is not supported");
  }
  if (c.model_type == "llama") {
    bool bias = false;
    ZT_RETURN_IF_ERROR(r.boolean("attention_bias", &bias));
    c.qkv_bias = c.o_bias = bias;
  } else if (c.model_type == "qwen2") {
    c.qkv_bias = true;
    bool use_window = false;
    ZT_RETURN_IF_ERROR(r.boolean("use_sliding_window", &use_window));
    if (use_window) {
      ZT_RETURN_IF_ERROR(r.integer("sliding_window", &c.sliding_window));
      // HF's Qwen2Config: layers i >= max_window_layers (default 28) slide.
      c.window_from_layer = 28;
      ZT_RETURN_IF_ERROR(r.integer("max_window_layers", &c.window_from_layer, false));
      if (c.window_from_layer < 0)
        return invalid_argument(prefix + "max_window_layers must be >= 0");
    }
  } else if (c.model_type == "mistral") {
    ZT_RETURN_IF_ERROR(r.integer("sliding_window", &c.sliding_window, false));
  } else {
    return invalid_argument("llama config: model_type \"" + c.model_type +
                            "\" is not one of llama, mistral, qwen2");
  }
  // Newer transformers write the per-layer attention kinds out; they must be
  // the ones the window keys above imply (kept verbatim in extra).
  if (r.has("layer_types")) {
    const nlohmann::json& types = j["layer_types"];
    if (!types.is_array() || static_cast<int64_t>(types.size()) != c.num_layers)
      return invalid_argument(prefix + "layer_types must list num_hidden_layers entries");
    for (int64_t l = 0; l < c.num_layers; ++l) {
      const std::string want = c.windowed(l) ? "sliding_attention" : "full_attention";
      if (types[static_cast<size_t>(l)] != want)
        return invalid_argument(prefix + "layer_types[" + std::to_string(l) + "] is " +
                                types[static_cast<size_t>(l)].dump() + " but sliding_window/" +
                                "max_window_layers make it \"" + want +
                                "\"; other layer patterns are not supported");
    }
  }
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!read_keys().count(it.key())) c.extra[it.key()] = it.value();
  ZT_RETURN_IF_ERROR(validate(c));
  return c;
}

std::vector<PresetInfo> presets_of(std::string_view model_type) {
  auto base = [](const char* type, int64_t V, int64_t C, int64_t I, int64_t L, int64_t NH,
                 int64_t NKV, int64_t maxT, double theta, bool tied) {
    return nlohmann::json{{"model_type", type},         {"vocab_size", V},
                          {"hidden_size", C},           {"intermediate_size", I},
                          {"num_hidden_layers", L},     {"num_attention_heads", NH},
                          {"num_key_value_heads", NKV}, {"max_position_embeddings", maxT},
                          {"rms_norm_eps", 1e-5},       {"rope_theta", theta},
                          {"tie_word_embeddings", tied}};
  };
  std::vector<PresetInfo> out;
  if (model_type == "llama") {
    out.push_back({"llama-tiny", base("llama", 256, 192, 512, 4, 6, 2, 128, 10000.0, false),
                   "4 layers x 192, 6 heads / 2 kv heads, byte-level vocab 256, seq 128"});
    out.push_back({"smollm-135m", base("llama", 49152, 576, 1536, 30, 9, 3, 2048, 10000.0, true),
                   "SmolLM-135M's shape: 30 layers x 576, 9 heads / 3 kv, vocab 49152, tied"});
    out.push_back({"tinyllama-1.1b",
                   base("llama", 32000, 2048, 5632, 22, 32, 4, 2048, 10000.0, false),
                   "TinyLlama-1.1B's shape: 22 layers x 2048, 32 heads / 4 kv, vocab 32000"});
    nlohmann::json l32 = base("llama", 128256, 2048, 8192, 16, 32, 8, 131072, 500000.0, true);
    l32["rope_scaling"] = {{"rope_type", "llama3"},
                           {"factor", 32.0},
                           {"low_freq_factor", 1.0},
                           {"high_freq_factor", 4.0},
                           {"original_max_position_embeddings", 8192}};
    out.push_back({"llama-3.2-1b", l32,
                   "Llama-3.2-1B's shape: 16 layers x 2048, 32 heads / 8 kv, vocab 128256, "
                   "llama3 rope scaling, tied"});
  } else if (model_type == "mistral") {
    nlohmann::json m = base("mistral", 256, 128, 384, 2, 4, 2, 128, 10000.0, false);
    m["sliding_window"] = 128;
    out.push_back({"mistral-tiny", m,
                   "2 layers x 128, 4 heads / 2 kv heads, sliding window 128, byte vocab 256"});
  } else if (model_type == "qwen2") {
    out.push_back({"qwen2-tiny", base("qwen2", 256, 128, 384, 2, 4, 1, 128, 1000000.0, true),
                   "2 layers x 128, 4 heads / 1 kv head, q/k/v biases, tied, byte vocab 256"});
  }
  return out;
}

}  // namespace zerotrain::model::llama
