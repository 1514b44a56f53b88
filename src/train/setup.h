// Trainer set-up, internal to src/train/: the typed config (the user's
// ds_config or the embedded default, "auto" resolved HF-style), the model
// shape, the sequence length and step count, and the datasets.
//
//   ZT_ASSIGN_OR_RETURN(Setup s, make_setup(options, comm.world_size()));
//   ZT_ASSIGN_OR_RETURN(CorpusSplits data, load_data(options, s.info));
//
// Thread-safety: pure functions (they read files).
#pragma once

#include <cstdint>

#include "config/config.h"
#include "core/status.h"
#include "model/registry.h"
#include "train/data/corpus.h"
#include "train/trainer.h"

namespace zerotrain::train {

struct Setup {
  config::Config cfg;
  model::ModelSpec model;  // family and config
  // The HF model directory `--model` named, when it holds weights: the
  // initial weights (unless init_weights overrides them).
  std::string model_weights;
  model::ModelInfo info;   // its vocabulary, block size, width, parameter count
  int64_t T = 0;      // sequence length
  int64_t steps = 0;  // optimizer steps to run
};

// The user's ds_config (or the embedded one) with the arguments the user
// gave (a non-auto value that disagrees with one is an error, as in HF); an
// "auto" whose argument was not given takes the trainer's default
// (default_trainer_args), as HF's TrainingArguments defaults do.
StatusOr<Setup> make_setup(const TrainOptions& options, int world_size);

// The generated corpus (the last kDefaultValFraction = 10% for validation) or DIR/train_*.bin (+
// val_*.bin if any). InvalidArgument if the data's vocabulary exceeds the model's.
StatusOr<CorpusSplits> load_data(const TrainOptions& options, const model::ModelInfo& info);

}  // namespace zerotrain::train
