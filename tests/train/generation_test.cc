// Generation's sampling against the softmax it samples (frequencies of
// 40,000 draws within 5 standard deviations of each token's probability,
// after temperature, top-k and top-p as HF's warpers define them), and the
// loop's stopping rules over a scripted decoder, and the repetition
// penalty against HF's processor.
#include "train/generation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>

#include "device/device.h"

namespace zerotrain::train {
namespace {

const std::vector<float> kLogits = {1.0f, 3.0f, 2.5f, -1.0f, 3.0f, 0.5f, 2.0f};

// Softmax of logits/temperature over `keep` (ids), zero elsewhere.
std::vector<double> expected(double temperature, const std::vector<int>& keep) {
  std::vector<double> p(kLogits.size(), 0.0);
  double sum = 0;
  for (int i : keep) sum += p[i] = std::exp(kLogits[i] / temperature);
  for (double& x : p) x /= sum;
  return p;
}

void expect_frequencies(const GenerateOptions& o, const std::vector<double>& p) {
  SplitMix64 rng(o.seed);
  constexpr int kDraws = 40000;
  std::vector<int> count(kLogits.size(), 0);
  for (int i = 0; i < kDraws; ++i) {
    auto t = pick_token(kLogits, o, rng);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    ++count[*t];
  }
  for (size_t i = 0; i < p.size(); ++i) {
    const double sd = std::sqrt(kDraws * p[i] * (1 - p[i]));
    EXPECT_NEAR(count[i], kDraws * p[i], 5 * sd + 1e-9) << "token " << i;
  }
}

TEST(Sampling, GreedyTakesTheFirstLargest) {
  SplitMix64 rng(1);
  EXPECT_EQ(*pick_token(kLogits, {.greedy = true}, rng), 1);
  EXPECT_EQ(*pick_token(kLogits, {.temperature = 0.0}, rng), 1);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    SplitMix64 r(seed);
    EXPECT_EQ(*pick_token(kLogits, {.top_k = 1, .seed = seed}, r), 1) << "top-k 1 is greedy";
    EXPECT_EQ(*pick_token(kLogits, {.top_p = 1e-9}, r), 1) << "a tiny top-p keeps one";
  }
}

TEST(Sampling, FrequenciesFollowTheWarpedSoftmax) {
  expect_frequencies({.temperature = 1.0, .seed = 3}, expected(1.0, {0, 1, 2, 3, 4, 5, 6}));
  expect_frequencies({.temperature = 0.5, .seed = 4}, expected(0.5, {0, 1, 2, 3, 4, 5, 6}));
  // top-k 3: the three largest logits (3.0, 3.0, 2.5: ids 1, 4, 2).
  expect_frequencies({.top_k = 3, .seed = 5}, expected(1.0, {1, 4, 2}));
  // top-p 0.9: the most likely first (ids 1, 4, 2, 6, ...) until the mass
  // reaches 0.9: p = .312, .312, .189 (.812), then .115 -> 4 tokens.
  const std::vector<double> full = expected(1.0, {0, 1, 2, 3, 4, 5, 6});
  ASSERT_LT(full[1] + full[4] + full[2], 0.9);
  ASSERT_GE(full[1] + full[4] + full[2] + full[6], 0.9);
  expect_frequencies({.top_p = 0.9, .seed = 6}, expected(1.0, {1, 4, 2, 6}));
}

TEST(Sampling, RefusesBadSettings) {
  SplitMix64 rng(1);
  EXPECT_FALSE(pick_token(kLogits, {.temperature = -1}, rng).ok());
  EXPECT_FALSE(pick_token(kLogits, {.top_p = 0}, rng).ok());
  EXPECT_FALSE(pick_token(kLogits, {.top_k = -2}, rng).ok());
}

// HF's RepetitionPenaltyLogitsProcessor: each seen token once (1 appears
// twice), a positive logit divided by the penalty, a negative one
// multiplied; the others untouched.
TEST(Sampling, RepetitionPenaltyIsHuggingFacesProcessor) {
  std::vector<float> l = kLogits;
  const std::vector<int32_t> seen = {1, 3, 1, 6};
  ASSERT_TRUE(apply_repetition_penalty(l, seen, 2.0).ok());
  EXPECT_EQ(l, (std::vector<float>{1.0f, 1.5f, 2.5f, -2.0f, 3.0f, 0.5f, 1.0f}));
  // Greedy then skips the repeated 1 for 4, the other 3.0.
  SplitMix64 rng(1);
  auto t = pick_token(l, {.greedy = true}, rng);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, 4);
  EXPECT_FALSE(apply_repetition_penalty(l, seen, 0.0).ok());
  EXPECT_FALSE(apply_repetition_penalty(l, std::vector<int32_t>{7}, 2.0).ok());
}

// Logits that make token (position + 1) % V the most likely.
class CountingDecoder : public model::Decoder {
 public:
  CountingDecoder() : Decoder(device::default_device(), 1, 16, 4, 5, 8) {
    EXPECT_TRUE(allocate_io().ok());
  }

 protected:
  Status forward(int64_t n, int64_t pos) override {
    std::vector<float> l(8, 0.0f);
    l[(pos + n) % 5] = 10.0f;
    return device_.copy(logits_.data(), l.data(), l.size() * 4);
  }
};

TEST(Generate, StopsAtEndOfSequenceOrTheLimit) {
  CountingDecoder d;
  const std::vector<int32_t> prompt = {0, 1};
  auto r = generate(d, prompt, {.max_new_tokens = 8, .greedy = true, .eos = {4u}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->tokens, (std::vector<int32_t>{2, 3, 4}));
  EXPECT_TRUE(r->stopped_at_eos);
  auto all = generate(d, prompt, {.max_new_tokens = 6, .greedy = true});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->tokens, (std::vector<int32_t>{2, 3, 4, 0, 1, 2}));
  EXPECT_EQ(all->token_seconds.size(), 6u);
  EXPECT_FALSE(generate(d, prompt, {.max_new_tokens = 15}).ok()) << "beyond the 16 positions";
  // Several end-of-sequence ids (generation_config.json's lists): the first met.
  auto any = generate(d, prompt, {.max_new_tokens = 8, .greedy = true, .eos = {9u, 0u, 4u}});
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->tokens, (std::vector<int32_t>{2, 3, 4}));
  // A stop condition over the new tokens (stop strings): the row stops after
  // the token that met it, not at an end-of-sequence.
  GenerateOptions until3{.max_new_tokens = 8, .greedy = true};
  until3.stop_after = [](std::span<const int32_t> t) { return t.back() == 3; };
  auto stopped = generate(d, prompt, until3);
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->tokens, (std::vector<int32_t>{2, 3}));
  EXPECT_TRUE(stopped->stopped_by_stop_after);
  EXPECT_FALSE(stopped->stopped_at_eos);
  EXPECT_FALSE(generate(d, {}, {}).ok()) << "empty prompt";
}

}  // namespace
}  // namespace zerotrain::train
