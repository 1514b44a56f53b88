// GptConfig presets, validation and parameter counting.
#include "model/gpt2/config.h"

#include <algorithm>

namespace zerotrain::model::gpt2 {
namespace {

// Levenshtein distance, for the "did you mean" hint.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

int64_t pad_vocab(int64_t vocab_size, int64_t multiple) {
  return (vocab_size + multiple - 1) / multiple * multiple;
}

Status validate(const GptConfig& cfg) {
  const std::pair<const char*, int64_t> sizes[] = {
      {"n_layer", cfg.n_layer}, {"n_head", cfg.n_head},         {"n_embd", cfg.n_embd},
      {"seq_len", cfg.seq_len}, {"vocab_size", cfg.vocab_size}, {"padded_vocab", cfg.padded_vocab}};
  for (const auto& [name, value] : sizes) {
    if (value <= 0) {
      return invalid_argument(std::string("model config: ") + name + " must be positive, got " +
                              std::to_string(value));
    }
  }
  if (cfg.n_embd % cfg.n_head != 0) {
    return invalid_argument("model config: n_embd (" + std::to_string(cfg.n_embd) +
                            ") must be a multiple of n_head (" + std::to_string(cfg.n_head) + ")");
  }
  if (cfg.padded_vocab < cfg.vocab_size) {
    return invalid_argument("model config: padded_vocab (" + std::to_string(cfg.padded_vocab) +
                            ") must be >= vocab_size (" + std::to_string(cfg.vocab_size) + ")");
  }
  return ok_status();
}

int64_t parameter_count(const GptConfig& cfg) {
  const int64_t C = cfg.n_embd;
  const int64_t per_block = 12 * C * C + 13 * C;
  return cfg.vocab_size * C + cfg.seq_len * C + cfg.n_layer * per_block + 2 * C;
}

int64_t padded_parameter_count(const GptConfig& cfg) {
  return parameter_count(cfg) + (cfg.padded_vocab - cfg.vocab_size) * cfg.n_embd;
}

int64_t flops_per_token(const GptConfig& cfg, int64_t T) {
  return 6 * parameter_count(cfg) + 12 * cfg.n_layer * cfg.n_embd * T;
}

const std::vector<PresetInfo>& list_presets() {
  static const std::vector<PresetInfo> presets = {
      {"gpt2-tiny",
       {.n_layer = 4,
        .n_head = 6,
        .n_embd = 192,
        .seq_len = 128,
        .vocab_size = 256,
        .padded_vocab = 256},
       "4 layers x 192, 6 heads, byte-level vocab 256, seq 128 (1.85 M params)"},
      // The PyTorch peer benchmark's reference model (issue #6: 4 layers,
      // 256 wide, 8 x 256 tokens a rank); bench/compare trains it on both sides.
      {"gpt2-5m",
       {.n_layer = 4,
        .n_head = 4,
        .n_embd = 256,
        .seq_len = 256,
        .vocab_size = 8192,
        .padded_vocab = 8192},
       "4 layers x 256, 4 heads, vocab 8192, seq 256 (5.32 M params; the PyTorch peer bench)"},
      {"gpt2-small-ish",
       {.n_layer = 6,
        .n_head = 8,
        .n_embd = 512,
        .seq_len = 256,
        .vocab_size = 8192,
        .padded_vocab = 8192},
       "6 layers x 512, 8 heads, vocab 8192, seq 256 (23.2 M params)"},
      {"gpt2",
       {.n_layer = 12,
        .n_head = 12,
        .n_embd = 768,
        .seq_len = 1024,
        .vocab_size = 50257,
        .padded_vocab = 50304},
       "GPT-2 124M: 12 layers x 768, 12 heads, vocab 50257 (padded 50304), seq 1024"},
  };
  return presets;
}

StatusOr<GptConfig> preset(std::string_view name) {
  std::string names;
  const PresetInfo* closest = nullptr;
  size_t best = ~size_t{0};
  for (const PresetInfo& p : list_presets()) {
    if (p.name == name) return p.config;
    names += (names.empty() ? "" : ", ") + p.name;
    const size_t d = edit_distance(name, p.name);
    if (d < best) best = d, closest = &p;
  }
  std::string msg = "unknown model preset '" + std::string(name) + "'";
  // Only suggest when the typo is plausibly one (a few edits away).
  if (closest != nullptr && best <= 3) msg += "; did you mean '" + closest->name + "'?";
  return not_found(msg + " (valid: " + names + ")");
}

nlohmann::json to_json(const GptConfig& cfg) {
  return {{"model_type", "gpt2"},         {"n_layer", cfg.n_layer},
          {"n_head", cfg.n_head},         {"n_embd", cfg.n_embd},
          {"n_positions", cfg.seq_len},   {"n_ctx", cfg.seq_len},
          {"vocab_size", cfg.vocab_size}, {"padded_vocab_size", cfg.padded_vocab}};
}

StatusOr<GptConfig> from_json(const nlohmann::json& j) {
  if (!j.is_object()) return invalid_argument("gpt2 config: not a JSON object");
  if (j.contains("model_type") && j["model_type"] != "gpt2")
    return invalid_argument("gpt2 config: model_type is " + j["model_type"].dump() +
                            ", not \"gpt2\"");
  auto get = [&](const char* key, const char* fallback_key, int64_t* out) -> Status {
    const char* k = j.contains(key) ? key : fallback_key;
    if (k == nullptr || !j.contains(k))
      return invalid_argument(std::string("gpt2 config: missing \"") + key + "\"");
    if (!j[k].is_number_integer())
      return invalid_argument(std::string("gpt2 config: \"") + k + "\" must be an integer, got " +
                              j[k].dump());
    *out = j[k].get<int64_t>();
    return ok_status();
  };
  GptConfig c;
  ZT_RETURN_IF_ERROR(get("n_layer", nullptr, &c.n_layer));
  ZT_RETURN_IF_ERROR(get("n_head", nullptr, &c.n_head));
  ZT_RETURN_IF_ERROR(get("n_embd", nullptr, &c.n_embd));
  ZT_RETURN_IF_ERROR(get("n_positions", "n_ctx", &c.seq_len));
  ZT_RETURN_IF_ERROR(get("vocab_size", nullptr, &c.vocab_size));
  if (j.contains("padded_vocab_size")) {
    ZT_RETURN_IF_ERROR(get("padded_vocab_size", nullptr, &c.padded_vocab));
  } else {
    c.padded_vocab = pad_vocab(c.vocab_size);
  }
  ZT_RETURN_IF_ERROR(validate(c));
  return c;
}

}  // namespace zerotrain::model::gpt2
