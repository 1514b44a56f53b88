// Test helpers for the engine: a micro GPT, seeded token batches, configs
// from JSON text, element-wise relative comparison, and a 16-bit stage 0's
// gradient accumulator.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "config/config.h"
#include "engine/engine.h"
#include "model/gpt2/gpt_model.h"
#include "zero/partition_array.h"
#include "zero/stage0_strategy.h"

namespace zerotrain::engine::testutil {

// 2 layers x 32 channels, vocab 64, seq 16: ~30 K parameters.
inline model::gpt2::GptConfig micro_gpt() {
  return {
      .n_layer = 2, .n_head = 2, .n_embd = 32, .seq_len = 16, .vocab_size = 64, .padded_vocab = 64};
}

// On `device` (null: the CPU device).
inline model::gpt2::GptModel make_model(int64_t max_batch, uint64_t seed = 7,
                                        device::Device* device = nullptr,
                                        std::shared_ptr<const model::LoraConfig> lora = {}) {
  StatusOr<model::gpt2::GptModel> m = model::gpt2::GptModel::create(
      micro_gpt(), {.max_batch = max_batch, .device = device, .lora = std::move(lora)});
  ZT_CHECK(m.ok(), m.status().to_string());
  const Status init = m->init_parameters(seed);
  ZT_CHECK(init.ok(), init.to_string());
  return std::move(m).value();
}

// n tokens in [0, 64) from a seeded generator.
inline std::vector<int32_t> tokens(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (auto& t : out) t = static_cast<int32_t>(rng() % 64);
  return out;
}

inline config::Config parse(const std::string& json, int64_t world_size = 1) {
  config::TrainerArgs args;
  args.world_size = world_size;
  StatusOr<config::Config> c = config::parse_config(json, args);
  ZT_CHECK(c.ok(), c.status().to_string());
  return std::move(c).value();
}

// 16-bit precision at stage 0: the gradients live in the strategy's 16-bit
// accumulator (half_compute.h), not in the model.
inline zero::PartitionArray& half_accumulator(Engine& e) {
  auto* dp = dynamic_cast<zero::DataParallelStrategy*>(&e.strategy());
  ZT_CHECK(dp != nullptr && dp->half_compute() != nullptr, "expected a 16-bit stage 0");
  return dp->half_compute()->gradients();
}

inline std::vector<float> copy(const float* p, int64_t n) { return std::vector<float>(p, p + n); }

// Every element within rel * |b| + abs of b.
inline void expect_close(const std::vector<float>& a, const std::vector<float>& b, double rel,
                         double abs, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  int64_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double tol = rel * std::fabs(b[i]) + abs;
    if (!(std::fabs(double(a[i]) - b[i]) <= tol) && bad++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: " << a[i] << " vs " << b[i];
  }
  EXPECT_EQ(bad, 0) << what << ": elements out of tolerance";
}

// ||a - b||_2 / ||b||_2, accumulated in double.
inline double relative_l2(const std::vector<float>& a, const std::vector<float>& b) {
  ZT_CHECK(a.size() == b.size(), "relative_l2: sizes differ");
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

// The change from `from` to `to`, element-wise.
inline std::vector<float> delta(const std::vector<float>& to, const std::vector<float>& from) {
  std::vector<float> d(to.size());
  for (size_t i = 0; i < to.size(); ++i) d[i] = to[i] - from[i];
  return d;
}

}  // namespace zerotrain::engine::testutil
