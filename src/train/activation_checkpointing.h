// The trainer's side of activation checkpointing: whether the model's
// blocks are checkpointed (the ds_config's activation_checkpointing section
// or --gradient-checkpointing), what the log says about each DeepSpeed key,
// and the per-step profile line.
//
//   mo.checkpoint_layers = checkpointing_on(cfg, options);
//   out << describe_checkpointing(cfg.activation_checkpointing, options, info.num_layers);
//   out << format_recompute_line(stages, seconds);   // activation_checkpointing.profile
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"
#include "train/trainer.h"

namespace zerotrain::train {

bool checkpointing_on(const config::Config& cfg, const TrainOptions& o);

// Lines for the start of the log ("" when checkpointing is off): that it is
// on and why, and what each set DeepSpeed key means here.
std::string describe_checkpointing(const config::Config& cfg, const TrainOptions& o,
                                   int64_t num_layers);

// "[zerotrain] activation checkpointing: recomputed 8 blocks in 12.3 ms"
std::string format_recompute_line(int64_t stages, double seconds);

}  // namespace zerotrain::train
