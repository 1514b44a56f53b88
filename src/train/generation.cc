#include "train/generation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

namespace zerotrain::train {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Uniform in [0, 1) with 53 bits.
double uniform(SplitMix64& rng) { return static_cast<double>(rng.next() >> 11) * 0x1.0p-53; }

}  // namespace

StatusOr<int32_t> pick_token(std::span<const float> logits, const GenerateOptions& o,
                             SplitMix64& rng) {
  if (o.greedy || o.temperature == 0.0) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  if (!(o.temperature > 0) || !(o.top_p > 0 && o.top_p <= 1) || o.top_k < 0) {
    return invalid_argument("generate: temperature " + std::to_string(o.temperature) +
                            " must be >= 0, top_p " + std::to_string(o.top_p) +
                            " in (0, 1], top_k " + std::to_string(o.top_k) + " >= 0");
  }
  const size_t V = logits.size();
  std::vector<int32_t> order(V);
  std::iota(order.begin(), order.end(), 0);
  // Most likely first; equal logits by id, so the draw is reproducible.
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  size_t keep = o.top_k > 0 ? std::min<size_t>(V, static_cast<size_t>(o.top_k)) : V;
  std::vector<double> p(keep);
  const double top = logits[order[0]] / o.temperature;
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) {
    p[i] = std::exp(logits[order[i]] / o.temperature - top);
    sum += p[i];
  }
  if (o.top_p < 1.0) {
    double cumulative = 0;
    size_t n = 0;
    while (n < keep) {
      cumulative += p[n++] / sum;
      if (cumulative >= o.top_p) break;
    }
    keep = std::max<size_t>(n, 1);
    sum = std::accumulate(p.begin(), p.begin() + static_cast<int64_t>(keep), 0.0);
  }
  double r = uniform(rng) * sum;
  for (size_t i = 0; i < keep; ++i) {
    r -= p[i];
    if (r < 0) return order[i];
  }
  return order[keep - 1];
}

StatusOr<GenerateResult> generate(model::Decoder& decoder, std::span<const int32_t> prompt,
                                  const GenerateOptions& o,
                                  const std::function<void(int32_t)>& on_token) {
  if (decoder.batch() != 1) return invalid_argument("generate: the decoder must have batch 1");
  if (prompt.empty()) return invalid_argument("generate: the prompt is empty");
  if (static_cast<int64_t>(prompt.size()) + o.max_new_tokens > decoder.max_seq()) {
    return invalid_argument("generate: a prompt of " + std::to_string(prompt.size()) +
                            " tokens and " + std::to_string(o.max_new_tokens) +
                            " new ones exceed the " + std::to_string(decoder.max_seq()) +
                            " positions the decoder holds");
  }
  decoder.reset();
  SplitMix64 rng(o.seed);
  GenerateResult r;
  std::vector<float> logits;
  auto t0 = std::chrono::steady_clock::now();
  ZT_RETURN_IF_ERROR(decoder.step(prompt.data(), static_cast<int64_t>(prompt.size()), &logits));
  r.prompt_seconds = seconds_since(t0);
  for (int64_t i = 0; i < o.max_new_tokens; ++i) {
    ZT_ASSIGN_OR_RETURN(int32_t next, pick_token(logits, o, rng));
    r.tokens.push_back(next);
    if (on_token) on_token(next);
    if (o.eos && static_cast<uint32_t>(next) == *o.eos) {
      r.stopped_at_eos = true;
      r.token_seconds.push_back(0);
      break;
    }
    if (i + 1 == o.max_new_tokens) {
      r.token_seconds.push_back(0);
      break;
    }
    t0 = std::chrono::steady_clock::now();
    ZT_RETURN_IF_ERROR(decoder.step(&next, 1, &logits));
    r.token_seconds.push_back(seconds_since(t0));
  }
  return r;
}

}  // namespace zerotrain::train
