// Instruction tuning's loss mask, end to end in-process: examples laid out
// in blocks with a mask (as `data tokenize --seq-len` writes them), read by
// the loader, through the model. The reference evaluates every trained
// target on its own: a forward over just that target's prefix (no padding,
// no later tokens, no other example) with only that target. The masked
// batch's loss must be their
// mean and its gradient the mean of theirs: masked and padded positions
// contribute nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "model/registry.h"
#include "train/data/loader.h"

namespace zerotrain::train {
namespace {

constexpr int64_t T = 12, kExamples = 4;

std::unique_ptr<model::Module> make(const char* preset, int64_t B) {
  auto spec = model::model_spec(preset);
  EXPECT_TRUE(spec.ok()) << spec.status().to_string();
  auto m = model::create_module(*spec, {.max_batch = B, .max_seq = T});
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(m).value();
}

// kExamples chat-like examples in blocks of T: a prompt (untrained), a
// reply (trained), padding (ignored), and the trailing pad token.
TokenDataset blocks(std::mt19937& gen) {
  std::vector<uint32_t> tokens;
  std::vector<uint8_t> trained;
  for (int e = 0; e < kExamples; ++e) {
    const int prompt = 2 + e, reply = 3 + e % 3;
    for (int k = 0; k < T; ++k) {
      tokens.push_back(k < prompt + reply ? gen() % 200 : 255);
      trained.push_back(k >= prompt && k < prompt + reply ? 1 : 0);
    }
  }
  tokens.push_back(255);
  trained.push_back(0);
  return TokenDataset::from_tokens(tokens, 256, trained, T);
}

class SftMask : public ::testing::TestWithParam<const char*> {};

TEST_P(SftMask, MaskedBatchEqualsEveryTrainedTargetAlone) {
  std::mt19937 gen(11);
  auto ds = std::make_shared<TokenDataset>(blocks(gen));
  auto loader = DataLoader::create(ds, {.seq_len = T, .micro_batch = kExamples, .shuffle = false});
  ASSERT_TRUE(loader.ok()) << loader.status().to_string();
  TokenBatch batch = loader->next();
  std::vector<int32_t> x, y;
  batch.split(&x, &y);

  auto m = make(GetParam(), kExamples);
  ASSERT_TRUE(m->init_parameters(3).ok());
  m->zero_gradients();
  auto loss = m->forward(x.data(), y.data(), kExamples, T);
  ASSERT_TRUE(loss.ok()) << loss.status().to_string();
  ASSERT_TRUE(m->backward(1.0f).ok());
  const int64_t n = m->layout().total_numel();
  const std::vector<float> masked(m->gradients(), m->gradients() + n);

  // The reference: each trained target alone, on its prefix.
  auto one = make(GetParam(), 1);
  ASSERT_TRUE(one->init_parameters(3).ok());
  one->zero_gradients();
  std::vector<std::pair<int64_t, int64_t>> targets;  // (row, position)
  for (int64_t b = 0; b < kExamples; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      if (y[b * T + t] >= 0) targets.emplace_back(b, t);
    }
  }
  ASSERT_EQ(targets.size(), 3u + 4 + 5 + 3) << "replies of 3, 4, 5, 3 tokens";
  double loss_sum = 0;
  for (const auto& [b, t] : targets) {
    std::vector<int32_t> prefix(x.begin() + b * T, x.begin() + b * T + t + 1);
    std::vector<int32_t> target(t + 1, -1);
    target[t] = y[b * T + t];
    // The prefix alone (no padding, no later tokens, no other example),
    // its last position the only target (an ignored -1 elsewhere: the
    // model's ignore is checked against finite differences in model_test).
    auto lt = one->forward(prefix.data(), target.data(), 1, t + 1);
    ASSERT_TRUE(lt.ok()) << lt.status().to_string();
    loss_sum += *lt;
    ASSERT_TRUE(one->backward(1.0f / static_cast<float>(targets.size())).ok());
  }
  EXPECT_NEAR(*loss, loss_sum / targets.size(), 2e-6 * std::abs(*loss));
  const float* ref = one->gradients();
  float scale = 0, worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    scale = std::max(scale, std::abs(ref[i]));
    worst = std::max(worst, std::abs(ref[i] - masked[i]));
  }
  EXPECT_GT(scale, 0.0f);
  EXPECT_LE(worst, 2e-5f * scale) << "largest gradient difference";
}

INSTANTIATE_TEST_SUITE_P(Families, SftMask, ::testing::Values("gpt2-tiny", "llama-tiny"));

TEST(SftMask, LoaderRefusesAnotherSequenceLength) {
  std::mt19937 gen(1);
  auto ds = std::make_shared<TokenDataset>(blocks(gen));
  auto wrong = DataLoader::create(ds, {.seq_len = T / 2, .micro_batch = 1});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("padded to blocks of 12 tokens"), std::string::npos)
      << wrong.status().message();
}

}  // namespace
}  // namespace zerotrain::train
