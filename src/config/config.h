// The typed, validated DeepSpeed configuration (`ds_config.json`) and the
// functions that produce it. Every key is declared once in the schema
// (schema.h); parsing fills defaults, resolves "auto" from TrainerArgs,
// derives the batch-size triangle and checks cross-field rules, reporting
// every problem at once with its JSON path and line. See docs/config.md.
//
//   TrainerArgs args;
//   args.world_size = 2;
//   ZT_ASSIGN_OR_RETURN(config::Config cfg, config::load_config_file(path, args));
//   if (cfg.zero.stage == 3) ...;
//   std::puts(config::effective_config_json(cfg).c_str());
//
// Thread-safety: all functions are pure (the schema is built once, thread-
// safely, on first use); Config is a value type, share it as const.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace zerotrain::config {

using zerotrain::DType;  // core/dtype.h: fp32, fp16, bf16
enum class OffloadDevice { kNone, kCpu, kNvme };
enum class OptimizerType { kNone, kAdam, kAdamW, kSgd };
enum class SchedulerType {
  kNone,
  kWarmupLR,
  kWarmupDecayLR,
  kWarmupCosineLR,
  kOneCycle,
  kLRRangeTest
};
enum class WarmupType { kLog, kLinear };
enum class AllreduceOp { kMean, kSum };
enum class TagValidation { kIgnore, kWarn, kFail };

// Spellings as written in ds_config.json ("bf16", "cpu", "AdamW", ...);
// kNone prints as "none".
std::string_view to_string(DType v);
std::string_view to_string(OffloadDevice v);
std::string_view to_string(OptimizerType v);
std::string_view to_string(SchedulerType v);
std::string_view to_string(WarmupType v);
std::string_view to_string(AllreduceOp v);
std::string_view to_string(TagValidation v);

// train_batch_size = train_micro_batch_size_per_gpu × gradient_accumulation_steps × world_size.
struct BatchConfig {
  int64_t train_batch_size = 1;
  int64_t train_micro_batch_size_per_gpu = 1;
  int64_t gradient_accumulation_steps = 1;
  int64_t world_size = 1;  // the data-parallel world size the triangle was solved for
};

struct Fp16Config {
  bool enabled = false;
  double loss_scale = 0;  // 0 = dynamic
  int64_t initial_scale_power = 16;
  int64_t loss_scale_window = 1000;
  int64_t hysteresis = 2;
  bool consecutive_hysteresis = false;
  double min_loss_scale = 1;
  bool dynamic() const { return loss_scale == 0; }
};

struct Bf16Config {
  bool enabled = false;
  bool check_grad_overflow = true;  // skip the step when a gradient is inf/nan
};

struct OptimizerConfig {
  OptimizerType type = OptimizerType::kNone;  // kNone: the program supplies one
  double lr = 1e-3;
  std::array<double, 2> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  bool bias_correction = true;
  bool adam_w_mode = true;  // DeepSpeed: "Adam" means decoupled decay unless false
  double momentum = 0;      // SGD
  double dampening = 0;     // SGD
  bool nesterov = false;    // SGD
  // AdamW always decouples weight decay; Adam does when adam_w_mode.
  bool decoupled_weight_decay() const {
    return type == OptimizerType::kAdamW || (type == OptimizerType::kAdam && adam_w_mode);
  }
};

// Parameter names and defaults follow DeepSpeed's runtime/lr_schedules.py;
// only the fields of `type` are meaningful.
struct SchedulerConfig {
  SchedulerType type = SchedulerType::kNone;
  // WarmupLR, WarmupDecayLR
  double warmup_min_lr = 0;
  double warmup_max_lr = 1e-3;  // resolved: WarmupLR takes optimizer lr when unset
  // WarmupLR, WarmupDecayLR, WarmupCosineLR
  int64_t warmup_num_steps = 1000;
  WarmupType warmup_type = WarmupType::kLog;
  // WarmupDecayLR, WarmupCosineLR (required there)
  std::optional<int64_t> total_num_steps;
  // WarmupCosineLR
  double warmup_min_ratio = 0;
  double cos_min_ratio = 1e-4;
  // OneCycle (cycle_min_lr, cycle_max_lr required there)
  std::optional<double> cycle_min_lr;
  std::optional<double> cycle_max_lr;
  double decay_lr_rate = 0;
  int64_t cycle_first_step_size = 2000;
  int64_t cycle_second_step_size = 2000;  // resolved: unset = first
  int64_t cycle_first_stair_count = 0;
  int64_t cycle_second_stair_count = 0;  // resolved: unset = first
  int64_t decay_step_size = 0;
  bool cycle_momentum = true;
  double cycle_min_mom = 0.8;
  double cycle_max_mom = 0.9;
  double decay_mom_rate = 0;
  // LRRangeTest
  double lr_range_test_min_lr = 1e-3;
  int64_t lr_range_test_step_size = 2000;
  double lr_range_test_step_rate = 1.0;
  bool lr_range_test_staircase = false;
};

struct OffloadConfig {
  OffloadDevice device = OffloadDevice::kNone;
  bool pin_memory = true;
  bool enabled() const { return device != OffloadDevice::kNone; }
};

// Sizes are element counts, as in DeepSpeed.
struct ZeroConfig {
  int stage = 0;
  bool contiguous_gradients = true;
  bool reduce_scatter = true;
  int64_t reduce_bucket_size = 500'000'000;
  bool allgather_partitions = true;
  int64_t allgather_bucket_size = 500'000'000;
  bool overlap_comm = false;  // resolved: unset = (stage == 3)
  bool round_robin_gradients = false;
  OffloadConfig offload_param;      // stage 3 only
  OffloadConfig offload_optimizer;  // stages 1-3
  int64_t sub_group_size = 1'000'000'000;
  int64_t stage3_prefetch_bucket_size = 50'000'000;
  int64_t stage3_param_persistence_threshold = 100'000;
  int64_t stage3_model_persistence_threshold = std::numeric_limits<int64_t>::max();
  int64_t stage3_max_live_parameters = 1'000'000'000;
  int64_t stage3_max_reuse_distance = 1'000'000'000;
  bool stage3_gather_16bit_weights_on_model_save = false;
};

// A local monitor (csv_monitor, tensorboard): files under output_path/job_name.
struct MonitorConfig {
  bool enabled = false;
  std::string output_path;  // "": the working directory
  std::string job_name = "DeepSpeedJobName";
};

// The comms logger: time every collective (or those in prof_ops when
// prof_all is off) and print DeepSpeed's summary table.
struct CommsLoggerConfig {
  bool enabled = false;
  bool verbose = false;  // a line per op as it completes (rank 0)
  bool prof_all = true;
  std::vector<std::string> prof_ops;  // DeepSpeed op names, e.g. "all_reduce"
};

// DeepSpeed's flops profiler: at one optimizer step, rank 0 prints (or
// writes to output_file) the profile of the model's forward per module.
struct FlopsProfilerConfig {
  bool enabled = false;
  int64_t profile_step = 1;   // DeepSpeed's global_steps (0-based): step profile_step + 1
  int64_t module_depth = -1;  // -1: every depth
  int64_t top_modules = 1;
  bool detailed = true;
  double recompute_fwd_factor = 0.0;       // recomputed forwards per step (fwd+bwd = 3 + it)
  std::optional<std::string> output_file;  // unset: the log
};

// DeepSpeed's activation_checkpointing section. zerotrain's models
// checkpoint every block when the section is present (as Megatron models
// call deepspeed.checkpointing when it is configured) or the trainer is
// given --gradient-checkpointing.
struct ActivationCheckpointingConfig {
  bool enabled = false;                         // the section is present
  bool partition_activations = false;           // a no-op without model parallelism
  bool contiguous_memory_optimization = false;  // ours are contiguous anyway
  bool cpu_checkpointing = false;               // checkpoints in host memory (the CPU device's own)
  std::optional<int64_t> number_checkpoints;    // DeepSpeed's buffer count; ours: every block
  bool synchronize_checkpoint_boundary = false;
  bool profile = false;  // log the recompute time each step
};

// zerotrain's "lora" section (not DeepSpeed's: PEFT's LoraConfig names):
// LoRA adapters over a frozen base when r > 0 (model/lora_config.h). The
// trainer's --lora-* flags override it.
struct LoraSectionConfig {
  int64_t r = 0;  // 0: full fine-tuning
  std::optional<double> lora_alpha;  // unset: 2·r (LLaMA-Factory's default)
  double lora_dropout = 0.0;
  std::vector<std::string> target_modules{"all-linear"};
  bool use_rslora = false;
  std::vector<std::string> modules_to_save;
  std::string init_lora_weights = "kaiming";  // PEFT's true; or "gaussian"
  bool load_in_4bit = false;                   // QLoRA: a 4-bit frozen base
  std::string bnb_4bit_quant_type = "nf4";     // or "fp4"
  bool bnb_4bit_use_double_quant = true;
};

struct CheckpointConfig {
  TagValidation tag_validation = TagValidation::kWarn;
  bool use_node_local_storage = false;
};

struct Config {
  BatchConfig batch;
  Fp16Config fp16;
  Bf16Config bf16;
  OptimizerConfig optimizer;
  SchedulerConfig scheduler;
  ZeroConfig zero;
  CheckpointConfig checkpoint;
  ActivationCheckpointingConfig activation_checkpointing;
  MonitorConfig csv_monitor;
  MonitorConfig tensorboard;
  FlopsProfilerConfig flops_profiler;
  CommsLoggerConfig comms_logger;
  LoraSectionConfig lora;

  double gradient_clipping = 1.0;          // global L2 norm; 0 disables
  std::optional<int64_t> steps_per_print;  // unset: no periodic progress line
  bool wall_clock_breakdown = false;
  bool memory_breakdown = false;
  bool prescale_gradients = false;
  double gradient_predivide_factor = 1.0;
  AllreduceOp gradient_allreduce_op = AllreduceOp::kMean;
  std::optional<DType> communication_data_type;  // unset: model dtype
  std::optional<DType> grad_accum_dtype;         // data_types.grad_accum_dtype
  bool dataloader_drop_last = false;

  // Provenance, for the effective-config printout.
  std::vector<std::string> resolved_from_auto;  // JSON paths, schema order
  // Where each of those came from: "--lr" (a trainer flag the user gave),
  // "default of --lr" (the trainer's default), "derived" (the batch
  // triangle), "DeepSpeed default" ("auto" in a section DeepSpeed
  // validates, where it drops "auto" keys), or the trainer's optimizer,
  // schedule or batch when the config has none.
  std::map<std::string, std::string> auto_sources;
  std::vector<std::string> warnings;            // deprecated spellings etc.
  // Keys zerotrain accepts but does not act on, given a non-default value:
  // JSON path -> value as JSON text.
  std::map<std::string, std::string> inert_values;

  // bf16 if bf16.enabled, fp16 if fp16.enabled, else fp32.
  DType model_dtype() const {
    return bf16.enabled ? DType::kBFloat16 : fp16.enabled ? DType::kFloat16 : DType::kFloat32;
  }
};

// What the trainer knows, for resolving "auto" (as HF's Trainer does from
// its TrainingArguments). Parsing takes two of these: `args`, the arguments
// the user actually gave, and `defaults`, the trainer's value for each one
// (HF's TrainingArguments always have one, so an "auto" never fails for
// want of a flag). An "auto" resolves from `args`, else from `defaults`;
// only when both lack the argument is it an error naming it. A non-auto
// config value that disagrees with a given argument is an error (HF does
// the same); defaults are never compared with explicit values, so a config
// that spells out lr 3e-4 runs without --lr.
struct TrainerArgs {
  std::optional<double> lr;
  std::optional<std::array<double, 2>> betas;
  std::optional<double> eps;
  std::optional<double> weight_decay;
  std::optional<int64_t> warmup_steps;
  std::optional<int64_t> total_steps;
  std::optional<int64_t> micro_batch_per_gpu;
  std::optional<int64_t> gradient_accumulation_steps;
  std::optional<double> max_grad_norm;
  std::optional<int64_t> hidden_size;
  std::optional<int64_t> world_size;  // unset: 1
  std::optional<bool> fp16;
  std::optional<bool> bf16;
};

// One problem (or warning), located by JSON path ("" = the whole document)
// and, when the key is in the text, by line.
struct ConfigError {
  std::string path;
  std::string message;
  int line = 0;  // 1-based line of the key; 0 = not in the text
  // "zero_optimization.stage: must be ... (line 7)"
  std::string to_string() const {
    std::string s = path.empty() ? message : path + ": " + message;
    return line > 0 ? s + " (line " + std::to_string(line) + ")" : s;
  }
};

// Everything a parse found: the config when there were no errors.
struct ParseResult {
  std::optional<Config> config;
  std::vector<ConfigError> errors;
  std::vector<ConfigError> warnings;
  // InvalidArgument listing every error, one per line; OK when none.
  Status status() const;
};

// The detailed form, for tests and tools that want the structured list.
ParseResult parse_config_detailed(std::string_view json_text, const TrainerArgs& args,
                                  const TrainerArgs& defaults = {});

// The config from JSON text (comments allowed, duplicate keys refused).
// Warnings (old spellings, stage-3 keys below stage 3) are returned in
// Config::warnings, not logged: the caller decides where they go.
StatusOr<Config> parse_config(std::string_view json_text, const TrainerArgs& args,
                              const TrainerArgs& defaults = {});

// The config from a file: NotFound / IoError name the path; config
// problems are InvalidArgument prefixed with the path.
StatusOr<Config> load_config_file(const std::string& path, const TrainerArgs& args,
                                  const TrainerArgs& defaults = {});

// Pretty JSON of every key zerotrain knows, with defaults filled and autos
// resolved; "_zerotrain" holds world_size, resolved_from_auto and warnings.
// The output parses back to the same Config (given the same world size).
std::string effective_config_json(const Config& config);

// docs/config.md, generated from the schema.
std::string config_reference_markdown();

// The batch-size triangle (DeepSpeed's rule, without its silent flooring):
// any two of the three determine the third; one alone sets gas = 1.
struct BatchSizes {
  int64_t train_batch_size = 0;
  int64_t micro_batch_per_gpu = 0;
  int64_t gradient_accumulation_steps = 0;
};
StatusOr<BatchSizes> solve_batch_sizes(std::optional<int64_t> train_batch_size,
                                       std::optional<int64_t> micro_batch_per_gpu,
                                       std::optional<int64_t> gradient_accumulation_steps,
                                       int64_t world_size);

}  // namespace zerotrain::config
