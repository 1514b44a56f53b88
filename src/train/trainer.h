// The built-in trainer loop (`zerotrain train`): builds the config (the
// user's ds_config or the embedded default, "auto" resolved from the
// trainer's flags and the communicator's world size), the model (a preset
// by name), the data (the generated corpus, or token shards from a
// directory), the engine, then runs optimizer steps, logging DeepSpeed-style
// lines on rank 0 every steps_per_print steps (and at step 1 and the last).
//
//   TrainOptions o;
//   o.steps = 100;
//   ZT_ASSIGN_OR_RETURN(TrainSummary s, train(o, *comm));
//   std::printf("%.3f -> %.3f\n", s.first_loss, s.last_loss);
//
// Deterministic: the same options, world size and thread count give
// bit-identical losses (seeded init, seeded loader, deterministic kernels).
// Thread-safety: train() uses the calling thread and the communicator; run
// one per rank.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/status.h"
#include "device/quant4.h"
#include "model/lora_config.h"

namespace zerotrain::train {

struct TrainOptions {
  std::string deepspeed_config;  // ds_config.json path; empty: kDefaultDsConfig
  std::string model = "gpt2-tiny";
  // A config JSON with model_type (model/registry.h); overrides `model`
  // (tests, tools).
  std::optional<nlohmann::json> model_config;
  // The CPU device's capacity in bytes (0: unlimited; unset: as
  // ZEROTRAIN_DEVICE_MEMORY says); allocations beyond it fail, naming what
  // would fit.
  std::optional<int64_t> device_memory;
  std::string data_dir;            // train_*.bin / val_*.bin shards; empty: generated corpus
  uint64_t corpus_bytes = 400000;  // size of the generated corpus
  uint64_t seed = 1234;            // init and data order
  // Optimizer steps; unset: scheduler.total_num_steps, else the default.
  std::optional<int64_t> steps;
  // Trainer arguments ("auto" sources). Unset means "not given": an "auto"
  // then takes the trainer's default (default_trainer_args), and explicit
  // config values are not compared with it.
  std::optional<double> lr, weight_decay, max_grad_norm, eps;
  std::optional<std::array<double, 2>> betas;
  std::optional<int64_t> micro_batch, grad_accum, warmup_steps;
  std::optional<bool> bf16, fp16;
  std::optional<int64_t> seq_len;  // unset: min(preset seq_len, default 64)
  int64_t eval_interval = 0;       // validation loss every N steps; 0 = off
  int64_t eval_batches = 4;        // micro-batches per rank per validation
  int threads = 0;  // OpenMP threads per rank; 0: cores / local ranks (or OMP_NUM_THREADS)
  int local_ranks = 0;  // ranks on this host; 0: LOCAL_WORLD_SIZE, else the world size
  // Checkpoints (engine save/load_checkpoint, tag "global_step<N>"): save
  // into save_dir every save_interval steps (0: only after the last step);
  // resume from load_dir (load_tag, or the one DIR/latest names), at any
  // world size and stage: the step count, data position, optimizer,
  // scheduler and loss scale continue where the checkpoint left them.
  std::string save_dir;
  int64_t save_interval = 0;
  std::string load_dir, load_tag;
  // Initial weights from a safetensors file or an HF model directory, by
  // HF tensor name (instead of --model DIR's weights or the seeded init);
  // the model must match its shapes.
  std::string init_weights;
  // LoRA (`--lora-*`, the config file's "lora" section): train adapters over
  // a frozen base; null: full fine-tuning. init_adapter: a PEFT adapter
  // directory to start from (its config is the run's when lora is null).
  std::shared_ptr<const model::LoraConfig> lora;
  std::string init_adapter;
  // QLoRA (`--load-in-4bit`, the "lora" section's load_in_4bit): the frozen
  // Linear weights held 4-bit; needs LoRA.
  std::optional<device::Quant4Options> base_4bit;
  // Activation checkpointing of every block, as HF's --gradient_checkpointing
  // (also on when the ds_config has an activation_checkpointing section).
  bool gradient_checkpointing = false;
  // Rank 0 appends one JSON line a step: step, loss (exact: %.9g), lr,
  // loss_scale, grad_norm, skipped.
  std::string metrics_file;
  std::ostream* out = nullptr;   // rank 0's log; null: std::cout
  std::optional<bool> progress;  // progress bar on stderr; unset: iff a TTY
};

struct TrainSummary {
  std::vector<double> losses;      // per optimizer step, mean over ranks and micro-batches
  std::vector<double> val_losses;  // per validation
  double first_loss = 0, last_loss = 0;
  double mean_tokens_per_s = 0;  // global tokens / step time, step 1 (warm-up) excluded
  int64_t steps = 0, skipped_steps = 0;
  int64_t first_step = 1;        // > 1 after resuming from a checkpoint
  int64_t tokens_per_step = 0;   // global: B * T * gas * world
  std::string effective_config;  // as printed at start
  int64_t device_peak_bytes = 0;  // most device memory this rank held at once
};

StatusOr<TrainSummary> train(const TrainOptions& options, comm::Communicator& comm);

}  // namespace zerotrain::train
