// Activation checkpointing (ModuleOptions::checkpoint_layers) in both
// families: the loss and every gradient bit-identical to the model without
// it, over accumulated micro-batches, with tied (gpt2, qwen2) and untied
// (llama) heads; the activation memory it saves against the formula (all
// per-layer arrays but the block output shared by the layers); and every
// block recomputed once per backward.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "model/registry.h"

namespace zerotrain::model {
namespace {

constexpr int B = 2, T = 16;

std::unique_ptr<Module> make(const char* preset, bool checkpoint, bool bf16 = false) {
  StatusOr<ModelSpec> spec = model_spec(preset);
  EXPECT_TRUE(spec.ok()) << spec.status().to_string();
  StatusOr<std::unique_ptr<Module>> m = create_module(
      *spec,
      {.max_batch = B, .max_seq = T, .bf16_compute = bf16, .checkpoint_layers = checkpoint});
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(m).value();
}

class Checkpointing : public ::testing::TestWithParam<const char*> {};

void expect_bit_identical(std::unique_ptr<Module> plain, std::unique_ptr<Module> ckpt) {
  ASSERT_TRUE(plain && ckpt);
  ASSERT_TRUE(plain->init_parameters(5).ok());
  ASSERT_TRUE(ckpt->init_parameters(5).ok());
  plain->zero_gradients();
  ckpt->zero_gradients();
  std::mt19937 gen(3);
  for (int micro = 0; micro < 3; ++micro) {  // accumulation across backward() calls
    std::vector<int32_t> tokens(B * T), targets(B * T);
    for (auto& t : tokens) t = static_cast<int32_t>(gen() % 256);
    for (auto& t : targets) t = gen() % 7 == 0 ? -1 : static_cast<int32_t>(gen() % 256);
    StatusOr<float> a = plain->forward(tokens.data(), targets.data(), B, T);
    StatusOr<float> b = ckpt->forward(tokens.data(), targets.data(), B, T);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(std::memcmp(&*a, &*b, sizeof(float)), 0) << *a << " vs " << *b;
    ASSERT_TRUE(plain->backward(1.0f / 3).ok());
    ASSERT_TRUE(ckpt->backward(1.0f / 3).ok());
  }
  const int64_t n = plain->layout().total_numel();
  EXPECT_EQ(std::memcmp(plain->gradients(), ckpt->gradients(), n * sizeof(float)), 0);
  const int blocks = plain->num_groups() - 2;
  EXPECT_EQ(ckpt->recomputed_stages(), 3 * blocks);
  EXPECT_EQ(plain->recomputed_stages(), 0);
}

TEST_P(Checkpointing, LossesAndGradientsAreBitIdenticalAndEveryBlockIsRecomputed) {
  for (bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16" : "fp32");
    expect_bit_identical(make(GetParam(), false, bf16), make(GetParam(), true, bf16));
  }
}

// Floats a block saves besides its output, by the family's activations.h
// (B·T = 32 keeps every array a multiple of 16 floats: no padding).
// bf16: the Llama family's bf16 path (q, k, v, atty, gate, up in bf16).
int64_t saved_per_block(const std::string& family, const nlohmann::json& c, bool bf16 = false) {
  const int64_t BT = B * T;
  if (family == "gpt2") {  // ln1/ln2 mean+rstd, qkv, atty, lse, res2, fch
    const int64_t C = c["n_embd"], NH = c["n_head"];
    return BT * (4 + 3 * C + C + C + 4 * C) + B * NH * T;
  }
  // rstd1/rstd2, q, k, v, atty, lse, res2, gate, up
  const int64_t C = c["hidden_size"], NH = c["num_attention_heads"],
                KC = C / NH * c["num_key_value_heads"].get<int64_t>(), I = c["intermediate_size"];
  if (bf16) return BT * (2 + 2 * C + KC + I) + B * NH * T;
  return BT * (2 + 3 * C + 2 * KC + 2 * I) + B * NH * T;
}

TEST_P(Checkpointing, KeepsOneBlocksActivationsAndEveryBlocksOutput) {
  auto plain = make(GetParam(), false), ckpt = make(GetParam(), true);
  ASSERT_TRUE(plain && ckpt);
  StatusOr<ModelSpec> spec = model_spec(GetParam());
  const int64_t L = plain->num_groups() - 2;
  const int64_t full = plain->memory().activation_bytes, lean = ckpt->memory().activation_bytes;
  EXPECT_EQ(full - lean, (L - 1) * saved_per_block(spec->family->name, spec->config) * 4);
  // What the family reports for the options is what the module allocates.
  StatusOr<int64_t> reported = spec->family->activation_bytes(
      spec->config, {.max_batch = B, .max_seq = T, .checkpoint_layers = true});
  ASSERT_TRUE(reported.ok());
  EXPECT_EQ(*reported, lean);
  if (spec->family->name == "gpt2") return;
  auto plain16 = make(GetParam(), false, true), ckpt16 = make(GetParam(), true, true);
  EXPECT_EQ(plain16->memory().activation_bytes - ckpt16->memory().activation_bytes,
            (L - 1) * saved_per_block(spec->family->name, spec->config, true) * 4);
}

INSTANTIATE_TEST_SUITE_P(Families, Checkpointing,
                         ::testing::Values("gpt2-tiny", "llama-tiny", "qwen2-tiny"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string s = i.param;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

}  // namespace
}  // namespace zerotrain::model
