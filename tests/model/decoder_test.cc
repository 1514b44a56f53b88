// Generation's KV-cached decoders against the training forward: after every
// step (a prompt, then single tokens and a chunk), each row's logits equal
// the full forward's logits at that position (full_logits), for GPT-2 and
// the Llama family (MHA with a tied head; GQA with q/k/v biases; sliding
// windows shorter than the sequence: Mistral's on every layer, Qwen2's from
// max_window_layers on).
#include "model/decoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "device/cpu/guarded_device.h"
#include "model/gpt2/gpt_model.h"
#include "model/llama/llama_model.h"
#include "model/registry.h"
#include "model/test_presets.h"

namespace zerotrain::model {
namespace {

constexpr int64_t B = 2, T = 40;

class DecoderVsForward : public ::testing::TestWithParam<const char*> {};

TEST_P(DecoderVsForward, EveryStepsLogitsEqualTheFullForwards) {
  auto spec = testing::preset_spec(GetParam());
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  auto m = create_module(*spec, {.max_batch = B, .max_seq = T, .full_logits = true});
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  Module& mod = **m;
  ASSERT_TRUE(mod.init_parameters(7).ok());
  std::mt19937 gen(5);
  std::vector<int32_t> tokens(B * T);
  for (auto& t : tokens) t = static_cast<int32_t>(gen() % 200);
  ASSERT_TRUE(mod.forward(tokens.data(), nullptr, B, T, false).ok());
  const float* full = nullptr;
  int64_t V = 0, Vp = 0;
  if (auto* g = dynamic_cast<gpt2::GptModel*>(&mod)) {
    full = g->logits(), V = g->config().vocab_size, Vp = g->config().padded_vocab;
  } else if (auto* l = dynamic_cast<llama::LlamaModel*>(&mod)) {
    full = l->logits(), V = l->config().vocab_size, Vp = l->config().padded_vocab;
  }
  ASSERT_NE(full, nullptr);

  auto dec = mod.make_decoder(B, T);
  ASSERT_TRUE(dec.ok()) << dec.status().to_string();
  std::vector<float> logits;
  const auto check = [&](int64_t last) {
    float scale = 0, worst = 0;
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t v = 0; v < V; ++v) {
        const float want = full[(b * T + last) * Vp + v], got = logits[b * V + v];
        scale = std::max(scale, std::abs(want));
        worst = std::max(worst, std::abs(want - got));
      }
    }
    EXPECT_LE(worst, 1e-5f * scale + 1e-6f) << "position " << last;
  };
  // Steps: a 7-token prompt, single tokens, a 5-token chunk, single tokens.
  std::vector<int64_t> steps = {7};
  for (int64_t fed = 7; fed < T;) {
    const int64_t n = fed == 20 ? 5 : 1;
    steps.push_back(std::min(n, T - fed));
    fed += steps.back();
  }
  std::vector<int32_t> rows;
  for (int64_t pos = 0; const int64_t n : steps) {
    rows.clear();
    for (int64_t b = 0; b < B; ++b) {
      rows.insert(rows.end(), tokens.begin() + b * T + pos, tokens.begin() + b * T + pos + n);
    }
    ASSERT_TRUE((*dec)->step(rows.data(), n, &logits).ok());
    pos += n;
    ASSERT_EQ((*dec)->position(), pos);
    check(pos - 1);
  }
  EXPECT_FALSE((*dec)->step(rows.data(), 1, &logits).ok()) << "past max_seq";
  (*dec)->reset();
  ASSERT_TRUE((*dec)->step(tokens.data(), 1, &logits).ok()) << "after reset";
}

// The device seam for generation: the KV-cached decoder on the guarded
// device (device ops that get host memory abort, as a GPU kernel would
// fault) gives the CPU device's logits bit for bit.
TEST_P(DecoderVsForward, GuardedDeviceDecodesAsTheCpuDevice) {
  auto spec = testing::preset_spec(GetParam());
  ASSERT_TRUE(spec.ok());
  std::unique_ptr<device::Device> guarded = device::cpu::make_guarded_device();
  std::vector<std::vector<float>> outs;
  for (device::Device* d : {static_cast<device::Device*>(nullptr), guarded.get()}) {
    auto m = create_module(*spec, {.max_batch = B, .max_seq = T, .device = d});
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    ASSERT_TRUE((*m)->init_parameters(7).ok());
    auto dec = (*m)->make_decoder(B, T);
    ASSERT_TRUE(dec.ok()) << dec.status().to_string();
    std::vector<int32_t> prompt(B * 6);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(i * 37 % 200);
    std::vector<float> logits, all;
    ASSERT_TRUE((*dec)->step(prompt.data(), 6, &logits).ok());
    all = logits;
    for (int i = 0; i < 4; ++i) {
      ASSERT_TRUE((*dec)->step(prompt.data() + i, 1, &logits).ok());
      all.insert(all.end(), logits.begin(), logits.end());
    }
    outs.push_back(all);
  }
  EXPECT_EQ(outs[0], outs[1]);
}

INSTANTIATE_TEST_SUITE_P(Families, DecoderVsForward,
                         ::testing::Values("gpt2-tiny", "llama-tiny", "qwen2-tiny",
                                           "mistral-tiny+window", "qwen2-tiny+window"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return testing::param_name(i.param);
                         });

}  // namespace
}  // namespace zerotrain::model
