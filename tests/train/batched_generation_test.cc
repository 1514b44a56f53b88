// Batched generation (prompts of different lengths, left-padded in one
// decoder) against one prompt at a time through the same model: token for
// token, greedy, with each row stopping at its own end-of-sequence token;
// for GPT-2 (learned positions), the Llama family (RoPE) and sliding
// windows the generation crosses. In bf16 (bf16 weights and KV cache) a
// GEMM's row can round differently beside other rows (oneDNN's blocking
// depends on the row count), so a near-tie may go the other way, as in
// batched bf16 generation anywhere: there the batched decoder, fed each
// row's own tokens, gives every row's logits within bf16 tolerance of that
// row decoded alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "model/registry.h"
#include "model/test_presets.h"
#include "train/generation.h"

namespace zerotrain::train {
namespace {

class BatchedGeneration : public ::testing::TestWithParam<const char*> {};

// The preset's model for up to 4 rows, seeded weights.
StatusOr<std::unique_ptr<model::Module>> seeded_model(const char* preset, int64_t max_seq) {
  ZT_ASSIGN_OR_RETURN(model::ModelSpec spec, model::testing::preset_spec(preset));
  ZT_ASSIGN_OR_RETURN(auto m, model::create_module(spec, {.max_batch = 4, .max_seq = max_seq}));
  ZT_RETURN_IF_ERROR(m->init_parameters(7));
  return m;
}

// Four prompts of lengths 3, 11, 6 and 1.
std::vector<std::vector<int32_t>> ragged_prompts() {
  std::mt19937 gen(3);
  std::vector<std::vector<int32_t>> prompts;
  for (size_t len : {3, 11, 6, 1}) {
    prompts.emplace_back(len);
    for (int32_t& t : prompts.back()) t = static_cast<int32_t>(gen() % 200);
  }
  return prompts;
}

void expect_batched_equals_alone(const char* preset, DType dtype) {
  constexpr int64_t kNew = 12, kMaxSeq = 32;
  auto m = seeded_model(preset, kMaxSeq);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const std::vector<std::vector<int32_t>> prompts = ragged_prompts();
  auto one = (*m)->make_decoder(1, kMaxSeq, dtype);
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  auto many = (*m)->make_decoder(static_cast<int64_t>(prompts.size()), kMaxSeq, dtype);
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

TEST_P(BatchedGeneration, EqualsOnePromptAtATimeTokenForToken) {
  expect_batched_equals_alone(GetParam(), DType::kFloat32);
}

// Left-padded prompts in one bf16 decoder, then the tokens each row
// generates alone fed to both: every step's logits of every row within
// bf16 tolerance of the row alone (and within fp32 tolerance in fp32).
TEST_P(BatchedGeneration, Bf16RowsDecodeAsAlone) {
  constexpr int64_t kMaxSeq = 32, kSteps = 8;
  auto m = seeded_model(GetParam(), kMaxSeq);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const std::vector<std::vector<int32_t>> prompts = ragged_prompts();
  const auto B = static_cast<int64_t>(prompts.size());
  const int64_t L = 11;
  for (const DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const float tol = dtype == DType::kFloat32 ? 1e-5f : 3e-2f;
    auto one = (*m)->make_decoder(1, kMaxSeq, dtype);
    auto many = (*m)->make_decoder(B, kMaxSeq, dtype);
    ASSERT_TRUE(one.ok() && many.ok());
    // Each row alone: the prompt, then kSteps greedy tokens; their logits.
    std::vector<std::vector<std::vector<float>>> alone(prompts.size());
    std::vector<std::vector<int32_t>> fed(prompts.size());
    for (size_t b = 0; b < prompts.size(); ++b) {
      (*one)->reset();
      std::vector<float> logits;
      ASSERT_TRUE(
          (*one)->step(prompts[b].data(), static_cast<int64_t>(prompts[b].size()), &logits).ok());
      for (int64_t s = 0; s <= kSteps; ++s) {
        alone[b].push_back(logits);
        const auto next =
            static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        fed[b].push_back(next);
        if (s < kSteps) ASSERT_TRUE((*one)->step(&next, 1, &logits).ok());
      }
    }
    // All rows in one decoder, left-padded to L, then the same tokens.
    std::vector<int64_t> starts;
    std::vector<int32_t> padded;
    for (const auto& p : prompts) {
      starts.push_back(L - static_cast<int64_t>(p.size()));
      padded.insert(padded.end(), static_cast<size_t>(starts.back()), 0);
      padded.insert(padded.end(), p.begin(), p.end());
    }
    ASSERT_TRUE((*many)->set_row_starts(starts).ok());
    std::vector<float> logits;
    ASSERT_TRUE((*many)->step(padded.data(), L, &logits).ok());
    const size_t V = logits.size() / prompts.size();
    for (int64_t s = 0; s <= kSteps; ++s) {
      for (size_t b = 0; b < prompts.size(); ++b) {
        const std::vector<float>& want = alone[b][static_cast<size_t>(s)];
        float scale = 0, worst = 0;
        for (size_t v = 0; v < V; ++v) {
          scale = std::max(scale, std::abs(want[v]));
          worst = std::max(worst, std::abs(logits[b * V + v] - want[v]));
        }
        EXPECT_LE(worst, tol * scale) << "row " << b << ", step " << s;
      }
      if (s == kSteps) break;
      std::vector<int32_t> next;
      for (const auto& f : fed) next.push_back(f[static_cast<size_t>(s)]);
      ASSERT_TRUE((*many)->step(next.data(), 1, &logits).ok());
    }
  }
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
