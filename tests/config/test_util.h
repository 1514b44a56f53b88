// Helpers shared by the config tests: parse text, find an error by path.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "config/config.h"

namespace zerotrain::config::testing {

// Every argument a trainer could give (h = 768, as GPT-2 small).
inline TrainerArgs full_args() {
  TrainerArgs a;
  a.lr = 3e-4;
  a.betas = std::array<double, 2>{0.9, 0.95};
  a.eps = 1e-8;
  a.weight_decay = 0.1;
  a.warmup_steps = 100;
  a.total_steps = 1000;
  a.micro_batch_per_gpu = 4;
  a.gradient_accumulation_steps = 2;
  a.max_grad_norm = 0.5;
  a.hidden_size = 768;
  a.world_size = 2;
  a.bf16 = true;
  a.fp16 = false;
  return a;
}

inline ParseResult parse(std::string_view text, const TrainerArgs& args = {}) {
  return parse_config_detailed(text, args);
}

// The config of a text that must parse; fails the test with all errors otherwise.
inline Config parse_ok(std::string_view text, const TrainerArgs& args = {}) {
  ParseResult r = parse(text, args);
  EXPECT_TRUE(r.config.has_value()) << r.status().to_string();
  return r.config.value_or(Config{});
}

// The message of the only error at `path`, or "" (and a test failure).
inline std::string error_at(const ParseResult& r, std::string_view path) {
  std::string found;
  int count = 0;
  for (const ConfigError& e : r.errors)
    if (e.path == path) found = e.message, ++count;
  EXPECT_EQ(count, 1) << "errors at " << path << " in:\n" << r.status().to_string();
  return found;
}

}  // namespace zerotrain::config::testing
