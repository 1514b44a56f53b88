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

Status apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> seen,
                                double penalty) {
  if (!(penalty > 0))
    return invalid_argument("generate: repetition_penalty " + std::to_string(penalty) +
                            " must be > 0");
  std::vector<bool> done(logits.size(), false);
  for (int32_t t : seen) {
    if (t < 0 || static_cast<size_t>(t) >= logits.size())
      return invalid_argument("generate: token " + std::to_string(t) + " is outside the " +
                              std::to_string(logits.size()) + " logits");
    if (done[static_cast<size_t>(t)]) continue;
    done[static_cast<size_t>(t)] = true;
    float& l = logits[static_cast<size_t>(t)];
    l = l < 0 ? static_cast<float>(l * penalty) : static_cast<float>(l / penalty);
  }
  return ok_status();
}

namespace {

bool is_eos(const GenerateOptions& o, int32_t t) {
  return std::find(o.eos.begin(), o.eos.end(), static_cast<uint32_t>(t)) != o.eos.end();
}

// The next token of a row whose prompt and tokens so far are `seen`.
StatusOr<int32_t> next_token(std::span<const float> logits, std::span<const int32_t> seen,
                             const GenerateOptions& o, SplitMix64& rng) {
  if (o.repetition_penalty == 1.0) return pick_token(logits, o, rng);
  std::vector<float> penalized(logits.begin(), logits.end());
  ZT_RETURN_IF_ERROR(apply_repetition_penalty(penalized, seen, o.repetition_penalty));
  return pick_token(penalized, o, rng);
}

}  // namespace

StatusOr<GenerateResult> generate(model::Decoder& decoder, std::span<const int32_t> prompt,
                                  const GenerateOptions& o,
                                  const std::function<void(int32_t)>& on_token) {
  if (decoder.batch() != 1) return invalid_argument("generate: the decoder must have batch 1");
  if (prompt.empty()) return invalid_argument("generate: the prompt is empty");
  // One row of a batch: no padding, so the decoder runs as it always did.
  std::function<void(int64_t, int32_t)> each;
  if (on_token) each = [&](int64_t, int32_t id) { on_token(id); };
  ZT_ASSIGN_OR_RETURN(std::vector<GenerateResult> r,
                      generate_batch(decoder, {{prompt.begin(), prompt.end()}}, o, each));
  return std::move(r.front());
}

StatusOr<std::vector<GenerateResult>> generate_batch(
    model::Decoder& decoder, const std::vector<std::vector<int32_t>>& prompts,
    const GenerateOptions& o, const std::function<void(int64_t, int32_t)>& on_token) {
  const int64_t B = static_cast<int64_t>(prompts.size());
  if (B == 0 || decoder.batch() != B)
    return invalid_argument("generate: " + std::to_string(B) + " prompts for a decoder of batch " +
                            std::to_string(decoder.batch()));
  size_t longest = 0;
  for (size_t b = 0; b < prompts.size(); ++b) {
    if (prompts[b].empty())
      return invalid_argument("generate: prompt " + std::to_string(b) + " is empty");
    longest = std::max(longest, prompts[b].size());
  }
  const int64_t L = static_cast<int64_t>(longest);
  if (L + o.max_new_tokens > decoder.max_seq()) {
    return invalid_argument("generate: the longest prompt, " + std::to_string(L) + " tokens, and " +
                            std::to_string(o.max_new_tokens) + " new ones exceed the " +
                            std::to_string(decoder.max_seq()) + " positions the decoder holds");
  }
  // Left padding: row b's prompt ends at L; its pads repeat its first token
  // (any valid id: nothing attends to them).
  std::vector<int64_t> starts(static_cast<size_t>(B));
  std::vector<int32_t> batch(static_cast<size_t>(B * L));
  for (int64_t b = 0; b < B; ++b) {
    const std::vector<int32_t>& p = prompts[static_cast<size_t>(b)];
    starts[static_cast<size_t>(b)] = L - static_cast<int64_t>(p.size());
    int32_t* row = batch.data() + b * L;
    std::fill_n(row, starts[static_cast<size_t>(b)], p.front());
    std::copy(p.begin(), p.end(), row + starts[static_cast<size_t>(b)]);
  }
  decoder.reset();
  ZT_RETURN_IF_ERROR(decoder.set_row_starts(starts));
  std::vector<SplitMix64> rngs(static_cast<size_t>(B), SplitMix64(o.seed));
  std::vector<GenerateResult> r(static_cast<size_t>(B));
  std::vector<bool> done(static_cast<size_t>(B), o.max_new_tokens <= 0);
  std::vector<float> logits;
  auto t0 = std::chrono::steady_clock::now();
  ZT_RETURN_IF_ERROR(decoder.step(batch.data(), L, &logits));
  const double prompt_seconds = seconds_since(t0);
  for (GenerateResult& g : r) g.prompt_seconds = prompt_seconds;
  const int64_t V = static_cast<int64_t>(logits.size()) / B;
  std::vector<int32_t> next(static_cast<size_t>(B));
  std::vector<std::vector<int32_t>> seen = prompts;  // each row's prompt and tokens so far
  for (int64_t i = 0; i < o.max_new_tokens; ++i) {
    for (int64_t b = 0; b < B; ++b) {
      const size_t rb = static_cast<size_t>(b);
      if (done[rb]) continue;  // fed its last token again; the result is unused
      std::span<const float> row(logits.data() + b * V, static_cast<size_t>(V));
      ZT_ASSIGN_OR_RETURN(next[rb], next_token(row, seen[rb], o, rngs[rb]));
      seen[rb].push_back(next[rb]);
      r[rb].tokens.push_back(next[rb]);
      if (on_token) on_token(b, next[rb]);
      r[rb].stopped_at_eos = is_eos(o, next[rb]);
      r[rb].stopped_by_stop_after =
          !r[rb].stopped_at_eos && o.stop_after && o.stop_after(r[rb].tokens);
      done[rb] = r[rb].stopped_at_eos || r[rb].stopped_by_stop_after || i + 1 == o.max_new_tokens;
    }
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
    t0 = std::chrono::steady_clock::now();
    ZT_RETURN_IF_ERROR(decoder.step(next.data(), 1, &logits));
    const double s = seconds_since(t0);
    for (int64_t b = 0; b < B; ++b)
      if (!done[static_cast<size_t>(b)]) r[static_cast<size_t>(b)].token_seconds.push_back(s);
  }
  // The step after a row's last token is not taken for it.
  for (GenerateResult& g : r)
    if (!g.tokens.empty()) g.token_seconds.push_back(0);
  return r;
}

}  // namespace zerotrain::train
