// GptConfig: the shape of a GPT-2 style decoder (layers, heads, width, block
// size, vocabulary), named presets, validation, and the exact parameter
// count. Embeddings are always tied (the lm head reuses wte), as in GPT-2.
//
//   ZT_ASSIGN_OR_RETURN(GptConfig cfg, preset("gpt2-tiny"));
//   int64_t n = parameter_count(cfg);   // HF-style count, unpadded vocab
//   for (const PresetInfo& p : list_presets()) std::puts(p.name.c_str());
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace zerotrain::model::gpt2 {

struct GptConfig {
  int64_t n_layer = 0;       // L, transformer blocks
  int64_t n_head = 0;        // NH, attention heads (n_embd % n_head == 0)
  int64_t n_embd = 0;        // C, channels
  int64_t seq_len = 0;       // maxT, block size (rows of wpe)
  int64_t vocab_size = 0;    // V, real vocabulary
  int64_t padded_vocab = 0;  // Vp >= V, rows of wte and width of the logits
};

// V rounded up to a multiple of `multiple` (GPT-2: 50257 -> 50304 with 64).
int64_t pad_vocab(int64_t vocab_size, int64_t multiple = 64);

// InvalidArgument naming the field: sizes must be positive, n_embd a
// multiple of n_head, padded_vocab >= vocab_size.
Status validate(const GptConfig& cfg);

// Parameters as HF's GPT2LMHeadModel counts them (vocab V, tied head
// counted once): V·C + maxT·C + L·(12·C² + 13·C) + 2·C.
// gpt2: 124,439,808.
int64_t parameter_count(const GptConfig& cfg);

// Elements of the real tensors in our layout, which stores wte with Vp
// rows: parameter_count(cfg) + (Vp - V)·C. Excludes alignment gaps (see
// ParamLayout::total_numel for the buffer size).
int64_t padded_parameter_count(const GptConfig& cfg);

// Training FLOPs per token at sequence length T, as llm.c and the PaLM
// appendix count them: 6·N (forward + backward of every weight, N =
// parameter_count) + 12·L·C·T (attention scores and mixing). For MFU.
int64_t flops_per_token(const GptConfig& cfg, int64_t T);

struct PresetInfo {
  std::string name;
  GptConfig config;
  std::string description;
};

// All presets, smallest first: gpt2-tiny (1,853,568 params), gpt2-5m
// (5,322,240), gpt2-small-ish (23,240,704), gpt2 (124,439,808).
const std::vector<PresetInfo>& list_presets();

// The named preset; NotFound listing every valid name (and the closest one)
// for an unknown name.
StatusOr<GptConfig> preset(std::string_view name);

// The HF GPT2Config form, as config.json holds it: model_type "gpt2",
// n_layer, n_head, n_embd, n_positions (= n_ctx), vocab_size, and
// padded_vocab_size (ours; HF ignores it). from_json reads that form
// (padded_vocab_size defaults to vocab_size rounded up to 64, n_positions
// to n_ctx); InvalidArgument naming a missing or bad key, or a model_type
// other than gpt2.
nlohmann::json to_json(const GptConfig& cfg);
StatusOr<GptConfig> from_json(const nlohmann::json& j);

}  // namespace zerotrain::model::gpt2
