// The Llama family's bf16 compute (autocast's GEMMs: bf16 operands, fp32
// accumulation) against its own fp32 path from the same weights and batch:
// the loss within 5e-3 relative and every gradient within 3e-2 of the
// fp32 gradient's norm (bf16 keeps 8 bits: ~4e-3 a rounding), for GQA and
// MQA, tied and untied; and bf16 actually differs (the operands are
// rounded), and the activation memory it reports is what it allocates.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "model/registry.h"

namespace zerotrain::model {
namespace {

constexpr int B = 2, T = 32;

class LlamaBf16 : public ::testing::TestWithParam<const char*> {};

TEST_P(LlamaBf16, FollowsFp32WithinBf16Rounding) {
  StatusOr<ModelSpec> spec = model_spec(GetParam());
  ASSERT_TRUE(spec.ok());
  auto make = [&](bool bf16) {
    StatusOr<std::unique_ptr<Module>> m =
        create_module(*spec, {.max_batch = B, .max_seq = T, .bf16_compute = bf16});
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    return std::move(m).value();
  };
  auto f32 = make(false), b16 = make(true);
  ASSERT_TRUE(f32 && b16);
  ASSERT_TRUE(f32->init_parameters(9).ok());
  ASSERT_TRUE(b16->init_parameters(9).ok());
  std::mt19937 gen(4);
  std::vector<int32_t> tokens(B * T), targets(B * T);
  for (auto& t : tokens) t = static_cast<int32_t>(gen() % 256);
  for (auto& t : targets) t = static_cast<int32_t>(gen() % 256);
  f32->zero_gradients();
  b16->zero_gradients();
  StatusOr<float> l32 = f32->forward(tokens.data(), targets.data(), B, T);
  StatusOr<float> l16 = b16->forward(tokens.data(), targets.data(), B, T);
  ASSERT_TRUE(l32.ok() && l16.ok());
  EXPECT_NEAR(*l16, *l32, 5e-3 * *l32);
  EXPECT_NE(*l16, *l32) << "bf16 operands must round something";
  ASSERT_TRUE(f32->backward().ok() && b16->backward().ok());
  for (const TensorInfo& t : f32->layout().tensors()) {
    double diff = 0, norm = 0;
    for (int64_t i = 0; i < t.numel; ++i) {
      const double a = f32->gradients()[t.offset + i], b = b16->gradients()[t.offset + i];
      diff += (a - b) * (a - b);
      norm += a * a;
    }
    ASSERT_GT(norm, 0) << t.name;
    EXPECT_LT(std::sqrt(diff / norm), 3e-2) << t.name;
  }
  StatusOr<int64_t> reported = spec->family->activation_bytes(
      spec->config, {.max_batch = B, .max_seq = T, .bf16_compute = true});
  ASSERT_TRUE(reported.ok());
  EXPECT_EQ(*reported, b16->memory().activation_bytes);
  EXPECT_GT(*reported, f32->memory().activation_bytes);  // + the operand scratch
}

INSTANTIATE_TEST_SUITE_P(Families, LlamaBf16, ::testing::Values("llama-tiny", "qwen2-tiny"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string s = i.param;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

}  // namespace
}  // namespace zerotrain::model
