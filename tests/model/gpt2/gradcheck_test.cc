// Whole-model gradient check: the fp32 analytic gradient of GptModel against
// central finite differences of a double-precision reference model, for a
// sample of elements of every tensor. Why a double reference rather than FD
// through the fp32 model: with h = 1e-5 in double the FD truncation error is
// O(h²) ~ 1e-10 and rounding ~ 1e-11, so the numeric side is exact to far
// below fp32's ~1e-7 relative error, and the tolerance only has to absorb
// fp32 rounding in the analytic gradient (rtol 2e-3, atol 2e-5); fp32 FD
// would need h ~ 1e-2 and then truncation error dominates.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "model/gpt2/gpt_model.h"
#include "model/gpt2/reference_gpt.h"

namespace zerotrain::model::gpt2 {
namespace {

using testing::micro_config;
using testing::Vec;

constexpr int B = 2, T = 5;

// Large random parameters (std 0.3, layernorm weights 1 ± 0.2, nonzero
// biases) so every path carries a sizeable gradient; padded wte rows 0.
void randomise(const ParamLayout& layout, float* p) {
  std::mt19937 gen(1234);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (const TensorInfo& t : layout.tensors()) {
    const bool ln_w = t.kind == ParamKind::kLayerNormWeight;
    const int64_t live =
        t.kind == ParamKind::kTokenEmbedding ? t.hf_shape[0] * t.shape[1] : t.numel;
    for (int64_t i = 0; i < live; ++i)
      p[t.offset + i] = (ln_w ? 1.0f : 0.0f) + (ln_w ? 0.2f : 0.3f) * d(gen);
  }
}

TEST(GradCheck, EveryTensorMatchesDoubleFiniteDifferences) {
  const GptConfig cfg = micro_config();
  StatusOr<GptModel> m = GptModel::create(cfg, {.max_batch = B, .max_seq = T});
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ParamLayout& layout = m->layout();
  randomise(layout, m->parameters());
  const std::vector<int32_t> tokens = testing::random_tokens(B * T, 23, 1);
  std::vector<int32_t> targets = testing::random_tokens(B * T, 23, 2);
  targets[3] = -1;  // an ignored position: no loss, no gradient
  m->zero_gradients();
  StatusOr<float> loss = m->forward(tokens.data(), targets.data(), B, T);
  ASSERT_TRUE(loss.ok()) << loss.status().to_string();
  ASSERT_TRUE(m->backward(1.0f).ok());
  const float* grad = m->gradients();

  Vec flat(m->parameters(), m->parameters() + layout.total_numel());
  auto f = [&](const Vec& x) {
    return testing::reference_loss(cfg, layout, x, tokens, targets, B, T);
  };
  EXPECT_NEAR(*loss, f(flat), 2e-5 * f(flat));
  EXPECT_EQ(m->losses()[3], 0.0f);

  const double h = 1e-5;
  for (const TensorInfo& t : layout.tensors()) {
    // Rows that can carry gradient: wte's real rows, wpe's first T rows.
    int64_t live = t.numel;
    if (t.kind == ParamKind::kTokenEmbedding) live = cfg.vocab_size * cfg.n_embd;
    if (t.kind == ParamKind::kPositionEmbedding) live = T * cfg.n_embd;
    double scale = 0.0;
    for (int k = 0; k < 6; ++k) {
      const int64_t i = t.offset + (k * 7919 + 13) % live;
      const double x0 = flat[i];
      flat[i] = x0 + h;
      const double fp = f(flat);
      flat[i] = x0 - h;
      const double fm = f(flat);
      flat[i] = x0;
      const double numeric = (fp - fm) / (2 * h);
      scale = std::max(scale, std::fabs(numeric));
      EXPECT_NEAR(grad[i], numeric, 2e-3 * std::fabs(numeric) + 2e-5)
          << t.name << "[" << i - t.offset << "]";
    }
    EXPECT_GT(scale, 1e-4) << t.name << ": sampled gradients ~0, the check would be vacuous";
    // Rows that cannot matter must get exactly zero.
    for (int64_t i = live; i < t.numel; ++i) {
      ASSERT_EQ(grad[t.offset + i], 0.0f) << t.name << "[" << i << "] beyond the live rows";
    }
  }
}

}  // namespace
}  // namespace zerotrain::model::gpt2
