// Batched generation (prompts of different lengths, left-padded in one
// decoder) against one prompt at a time through the same model: token for
// token, greedy, with each row stopping at its own end-of-sequence token;
// for GPT-2 (learned positions), the Llama family (RoPE) and sliding
// windows the generation crosses.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "model/registry.h"
#include "model/test_presets.h"
#include "train/generation.h"

namespace zerotrain::train {
namespace {

class BatchedGeneration : public ::testing::TestWithParam<const char*> {};

TEST_P(BatchedGeneration, EqualsOnePromptAtATimeTokenForToken) {
  constexpr int64_t kNew = 12, kMaxSeq = 32;
  auto spec = model::testing::preset_spec(GetParam());
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  auto m = model::create_module(*spec, {.max_batch = 4, .max_seq = kMaxSeq});
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  ASSERT_TRUE((*m)->init_parameters(7).ok());
  std::mt19937 gen(3);
  std::vector<std::vector<int32_t>> prompts;
  for (size_t len : {3, 11, 6, 1}) {
    prompts.emplace_back(len);
    for (int32_t& t : prompts.back()) t = static_cast<int32_t>(gen() % 200);
  }
  auto one = (*m)->make_decoder(1, kMaxSeq);
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  auto many = (*m)->make_decoder(static_cast<int64_t>(prompts.size()), kMaxSeq);
  ASSERT_TRUE(many.ok()) << many.status().to_string();

  GenerateOptions o{.max_new_tokens = kNew, .greedy = true};
  std::vector<GenerateResult> alone;
  for (const auto& p : prompts) {
    auto r = generate(**one, p, o);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    alone.push_back(*r);
  }
  auto batched = generate_batch(**many, prompts, o);
  ASSERT_TRUE(batched.ok()) << batched.status().to_string();
  ASSERT_EQ(batched->size(), prompts.size());
  for (size_t b = 0; b < prompts.size(); ++b) {
    EXPECT_EQ((*batched)[b].tokens, alone[b].tokens) << "prompt " << b;
    EXPECT_EQ((*batched)[b].token_seconds.size(), (*batched)[b].tokens.size());
  }
  // Distinct continuations, or the comparison proves little.
  EXPECT_NE(alone[0].tokens, alone[1].tokens);

  // Each row stops at its own end-of-sequence token: the third token row 1
  // generates alone.
  o.eos = {static_cast<uint32_t>(alone[1].tokens[2])};
  auto stopping = generate_batch(**many, prompts, o);
  ASSERT_TRUE(stopping.ok()) << stopping.status().to_string();
  for (size_t b = 0; b < prompts.size(); ++b) {
    auto r = generate(**one, prompts[b], o);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ((*stopping)[b].tokens, r->tokens) << "prompt " << b;
    EXPECT_EQ((*stopping)[b].stopped_at_eos, r->stopped_at_eos) << "prompt " << b;
  }
  EXPECT_TRUE((*stopping)[1].stopped_at_eos);
  EXPECT_LE((*stopping)[1].tokens.size(), 3u);

  // A repetition penalty reads each row's own prompt and tokens.
  o.eos.clear();
  o.repetition_penalty = 3.0;
  auto penalized = generate_batch(**many, prompts, o);
  ASSERT_TRUE(penalized.ok()) << penalized.status().to_string();
  bool changed = false;
  for (size_t b = 0; b < prompts.size(); ++b) {
    auto r = generate(**one, prompts[b], o);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ((*penalized)[b].tokens, r->tokens) << "prompt " << b << ", penalized";
    changed = changed || r->tokens != alone[b].tokens;
  }
  EXPECT_TRUE(changed) << "a penalty of 3 changed no continuation: the check would be vacuous";
}

INSTANTIATE_TEST_SUITE_P(Families, BatchedGeneration,
                         ::testing::Values("gpt2-tiny", "llama-tiny", "mistral-tiny+window",
                                           "qwen2-tiny+window"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return model::testing::param_name(i.param);
                         });

TEST(BatchedGenerationArguments, AreChecked) {
  auto spec = model::model_spec("llama-tiny");
  ASSERT_TRUE(spec.ok());
  auto m = model::create_module(*spec, {.max_batch = 2, .max_seq = 16});
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE((*m)->init_parameters(1).ok());
  auto dec = (*m)->make_decoder(2, 16);
  ASSERT_TRUE(dec.ok());
  const GenerateOptions o{.max_new_tokens = 4, .greedy = true};
  EXPECT_FALSE(generate_batch(**dec, {{1, 2}}, o).ok()) << "one prompt for two rows";
  EXPECT_FALSE(generate_batch(**dec, {{1, 2}, {}}, o).ok()) << "an empty prompt";
  EXPECT_FALSE(generate_batch(**dec, {{1, 2}, std::vector<int32_t>(13, 1)}, o).ok())
      << "13 + 4 positions in a decoder of 16";
  EXPECT_FALSE((*dec)->set_row_starts(std::vector<int64_t>{0, 16}).ok()) << "start past the end";
}

}  // namespace
}  // namespace zerotrain::train
