// Lending the activation memory between passes (Module::
// lend_activation_memory: ZeRO 1-3 with 16-bit compute use it for the
// step's fp32 gradients) must not lose anything a later pass needs: after
// the whole buffer was lent and filled with NaN, a forward and backward
// give the same loss and gradients bit for bit, for every family in fp32
// and bf16. (The Llama family kept its RoPE tables in that buffer; once
// the bf16 activations shrank it, a lent gradient overwrote them.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "model/registry.h"

namespace zerotrain::model {
namespace {

constexpr int B = 2, T = 16;

struct Case {
  const char* preset;
  bool bf16;
};

class Lending : public ::testing::TestWithParam<Case> {};

TEST_P(Lending, APassAfterTheWholeBufferWasLentIsBitIdentical) {
  StatusOr<ModelSpec> spec = model_spec(GetParam().preset);
  ASSERT_TRUE(spec.ok());
  StatusOr<std::unique_ptr<Module>> made =
      create_module(*spec, {.max_batch = B, .max_seq = T, .bf16_compute = GetParam().bf16});
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  Module& m = **made;
  ASSERT_TRUE(m.init_parameters(7).ok());
  std::mt19937 gen(2);
  std::vector<int32_t> tokens(B * T), targets(B * T);
  for (auto& t : tokens) t = static_cast<int32_t>(gen() % 200);
  for (auto& t : targets) t = static_cast<int32_t>(gen() % 200);
  auto pass = [&] {
    m.zero_gradients();
    StatusOr<float> loss = m.forward(tokens.data(), targets.data(), B, T);
    EXPECT_TRUE(loss.ok() && m.backward().ok());
    std::vector<float> out(m.gradients(), m.gradients() + m.layout().total_numel());
    out.push_back(loss.ok() ? *loss : NAN);
    return out;
  };
  const std::vector<float> before = pass();
  // The largest loan the model grants: its whole activation buffer.
  int64_t lo = 0, hi = m.memory().activation_bytes / 4;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    const bool granted = m.lend_activation_memory(mid) != nullptr;
    m.return_activation_memory();
    (granted ? lo : hi) = granted ? mid : mid - 1;
  }
  ASSERT_GT(lo, 0);
  float* lent = m.lend_activation_memory(lo);
  ASSERT_NE(lent, nullptr);
  std::fill(lent, lent + lo, std::nanf(""));
  m.return_activation_memory();
  const std::vector<float> after = pass();
  ASSERT_EQ(after.size(), before.size());
  EXPECT_EQ(std::memcmp(after.data(), before.data(), after.size() * sizeof(float)), 0)
      << "loss " << before.back() << " -> " << after.back();
}

INSTANTIATE_TEST_SUITE_P(Families, Lending,
                         ::testing::Values(Case{"gpt2-tiny", false}, Case{"gpt2-tiny", true},
                                           Case{"llama-tiny", false}, Case{"llama-tiny", true},
                                           Case{"qwen2-tiny", false}, Case{"qwen2-tiny", true}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           std::string s = i.param.preset;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s + (i.param.bf16 ? "_bf16" : "_fp32");
                         });

}  // namespace
}  // namespace zerotrain::model
