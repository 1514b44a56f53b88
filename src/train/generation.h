// Text generation over a model's KV-cached decoder (model/decoder.h):
// greedy or sampled (temperature, top-k, top-p, a seed), stopping at the
// end-of-sequence token or after max_new_tokens, every token handed to a
// callback as it comes (streaming). Sampling follows Hugging Face's
// processors and warpers in their order: the repetition penalty (every
// token of the prompt and of what was generated: a positive logit divided
// by it, a negative one multiplied), logits / temperature, keep the top_k largest,
// keep the smallest set of most likely tokens whose probability reaches
// top_p (at least one), then draw from the softmax of what is left with
// SplitMix64(seed). Greedy takes the first largest logit (torch.argmax).
//
//   GenerateOptions o{.max_new_tokens = 64, .greedy = true, .eos = {tok.eos_id()}};
//   ZT_ASSIGN_OR_RETURN(GenerateResult r, generate(*decoder, prompt, o, print_token));
//
// Thread-safety: uses the decoder (one per thread).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "core/status.h"
#include "model/decoder.h"
#include "train/data/rng.h"

namespace zerotrain::train {

struct GenerateOptions {
  int64_t max_new_tokens = 64;
  bool greedy = false;  // also when temperature is 0
  double temperature = 1.0;
  int64_t top_k = 0;   // 0: off
  double top_p = 1.0;  // 1: off
  uint64_t seed = 0;
  std::vector<uint32_t> eos;        // stop after generating any of them
  double repetition_penalty = 1.0;  // HF's repetition_penalty; 1: off, > 0
  // Stop strings and the like: called with a row's new tokens after each
  // one; true stops the row there (stopped_at_eos stays false).
  std::function<bool(std::span<const int32_t>)> stop_after;
};

struct GenerateResult {
  std::vector<int32_t> tokens;        // the new tokens (eos included when it stopped there)
  std::vector<double> token_seconds;  // [tokens] wall time of the step that produced each
  double prompt_seconds = 0;          // the prompt's forward (the first token's logits)
  bool stopped_at_eos = false;
  bool stopped_by_stop_after = false;  // GenerateOptions::stop_after said so
};

// The next token from one row's logits [V]. InvalidArgument for a
// temperature < 0, top_p outside (0, 1] or top_k < 0.
StatusOr<int32_t> pick_token(std::span<const float> logits, const GenerateOptions& o,
                             SplitMix64& rng);

// HF's RepetitionPenaltyLogitsProcessor on one row's logits: each token of
// `seen` once, a logit < 0 times penalty, else divided by it.
// InvalidArgument for a penalty <= 0 or a seen token outside the row.
Status apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> seen,
                                double penalty);

// Generates for one row (the decoder's batch must be 1) after `prompt`
// (non-empty), from the decoder's start (it is reset first): generate_batch
// of the one prompt, each token to on_token as it comes.
StatusOr<GenerateResult> generate(model::Decoder& decoder, std::span<const int32_t> prompt,
                                  const GenerateOptions& o,
                                  const std::function<void(int32_t)>& on_token = {});

// Generates for every prompt at once, one decoder row each (the batch must
// be their count): prompts of different lengths are left-padded to the
// longest (the pads are never attended to, and each row's positions count
// from its first real token), and each row stops at eos or max_new_tokens
// on its own; the step runs until every row has. Each row draws from its
// own SplitMix64(seed), so a row's tokens are generate()'s for that prompt
// alone. prompt_seconds is the batch's, token_seconds each step's.
// on_token(row, id) gets each new token as it comes.
StatusOr<std::vector<GenerateResult>> generate_batch(
    model::Decoder& decoder, const std::vector<std::vector<int32_t>>& prompts,
    const GenerateOptions& o, const std::function<void(int64_t, int32_t)>& on_token = {});

}  // namespace zerotrain::train
