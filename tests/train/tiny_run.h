// Test helper: the options of a tiny trainer run (a 1-layer GPT on the
// generated corpus, one thread) under a ds_config file, for the monitor tests.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "model/gpt2/config.h"
#include "train/trainer.h"

namespace zerotrain::train::testing {

inline TrainOptions tiny_run(const std::string& ds_config, int64_t steps, std::ostream* log) {
  TrainOptions o;
  o.model_config = model::gpt2::to_json({.n_layer = 1,
                                         .n_head = 2,
                                         .n_embd = 32,
                                         .seq_len = 16,
                                         .vocab_size = 256,
                                         .padded_vocab = 256});
  o.deepspeed_config = ds_config;
  o.steps = steps;
  o.corpus_bytes = 20000;
  o.threads = 1;
  o.out = log;
  o.progress = false;
  return o;
}

}  // namespace zerotrain::train::testing
