// The ds_config `zerotrain train` uses without --deepspeed, and the trainer
// arguments its "auto" values resolve from when the user gives none.
//
//   ZT_ASSIGN_OR_RETURN(config::Config c, config::parse_config(kDefaultDsConfig, args));
//
// Thread-safety: constants.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "config/config.h"

namespace zerotrain::train {

// fp32 (bf16/fp16 by flag), AdamW, WarmupLR (linear), gradient clipping 1.0, ZeRO stage 0;
// every hyperparameter is "auto", so trainer flags set it.
inline constexpr const char* kDefaultDsConfig = R"({
  "train_micro_batch_size_per_gpu": "auto",
  "gradient_accumulation_steps": "auto",
  "gradient_clipping": "auto",
  "steps_per_print": 25,
  "bf16": {"enabled": "auto"},
  "fp16": {"enabled": "auto"},
  "optimizer": {
    "type": "AdamW",
    "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}
  },
  "scheduler": {
    "type": "WarmupLR",
    "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
               "warmup_num_steps": "auto", "warmup_type": "linear"}
  },
  "zero_optimization": {"stage": 0}
})";

// Trainer defaults for the embedded config (flags override each).
struct DefaultTrainerArgs {
  static constexpr double kLr = 2e-3;
  static constexpr double kBeta1 = 0.9, kBeta2 = 0.95;
  static constexpr double kEps = 1e-8;
  static constexpr double kWeightDecay = 0.01;
  static constexpr double kMaxGradNorm = 1.0;
  static constexpr int64_t kMicroBatch = 8;
  static constexpr int64_t kGradAccum = 1;
  static constexpr int64_t kSteps = 300;
  static constexpr int64_t kSeqLen = 64;
};

// The trainer's value for every argument (as HF's TrainingArguments always
// have one): what an "auto" resolves to when its flag was not given, for a
// user's ds_config as for the embedded one. `config check` uses the same.
// hidden_size is the model's (bucket-size autos); world_size is not set.
inline config::TrainerArgs default_trainer_args(int64_t steps, int64_t hidden_size) {
  using D = DefaultTrainerArgs;
  config::TrainerArgs a;
  a.total_steps = steps;
  a.lr = D::kLr;
  a.betas = std::array<double, 2>{D::kBeta1, D::kBeta2};
  a.eps = D::kEps;
  a.weight_decay = D::kWeightDecay;
  a.max_grad_norm = D::kMaxGradNorm;
  a.micro_batch_per_gpu = D::kMicroBatch;
  a.gradient_accumulation_steps = D::kGradAccum;
  a.warmup_steps = std::clamp<int64_t>(steps / 10, 1, 50);
  a.hidden_size = hidden_size;
  a.bf16 = false;  // 16-bit training only when asked for (--bf16 / --fp16)
  a.fp16 = false;
  return a;
}

}  // namespace zerotrain::train
