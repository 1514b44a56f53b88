// Schema table, part 1: top-level scalars, checkpoint, data_types, fp16, bf16.
// Defaults are DeepSpeed's at v0.19.6 (runtime/constants.py and runtime/config.py there).
#include "config/json_value.h"
#include "config/schema.h"

namespace zerotrain::config {

using enum ValueType;
using enum Support;

void add_top_level_keys(std::vector<KeySpec>& out) {
  const KeySpec keys[] = {
      {.path = "train_batch_size",
       .type = kInt,
       .min = 1,
       .auto_ok = true,
       .nullable = true,
       .help = "Global batch per optimizer step = micro × gas × world_size. Any two of the "
               "three batch keys determine the third. auto: world_size × TrainerArgs "
               "micro_batch_per_gpu × gradient_accumulation_steps (as HF), or, without those "
               "arguments, derived from the other two keys.",
       ZT_FIELD(batch.train_batch_size)},
      {.path = "train_micro_batch_size_per_gpu",
       .type = kInt,
       .min = 1,
       .auto_ok = true,
       .nullable = true,
       .help = "Samples per rank per forward/backward. auto: TrainerArgs micro_batch_per_gpu.",
       ZT_FIELD(batch.train_micro_batch_size_per_gpu)},
      {.path = "gradient_accumulation_steps",
       .type = kInt,
       .min = 1,
       .auto_ok = true,
       .nullable = true,
       .help = "Micro-batches accumulated per optimizer step (1 when only one other batch key "
               "is given). auto: TrainerArgs gradient_accumulation_steps.",
       ZT_FIELD(batch.gradient_accumulation_steps)},
      {.path = "gradient_clipping",
       .type = kFloat,
       .default_json = "1.0",
       .min = 0,
       .auto_ok = true,
       .help = "Clip the global L2 gradient norm to this; 0 disables (DeepSpeed before v0.19.3 "
               "defaulted to 0). auto: TrainerArgs max_grad_norm.",
       ZT_FIELD(gradient_clipping)},
      {.path = "steps_per_print",
       .type = kInt,
       .min = 1,
       .nullable = true,
       .help = "Log progress every N optimizer steps; null: never.",
       ZT_FIELD(steps_per_print)},
      {.path = "wall_clock_breakdown",
       .type = kBool,
       .default_json = "false",
       .help = "DeepSpeed's timers: rank 0 logs `[Rank 0] time (ms) | fwd_microstep: .. | "
               "bwd_microstep: .. | bwd_inner_microstep: .. | bwd_allreduce_microstep: .. | "
               "step_microstep: ..` after each micro-step and the same without `_microstep` "
               "(summed over the micro-steps) after each optimizer step; monitors get "
               "Train/Samples/elapsed_time_ms_{forward,backward,backward_inner,"
               "backward_allreduce,step}.",
       ZT_FIELD(wall_clock_breakdown)},
      {.path = "memory_breakdown",
       .type = kBool,
       .default_json = "false",
       .help = "Log memory use at points of the step.",
       ZT_FIELD(memory_breakdown)},
      {.path = "prescale_gradients",
       .type = kBool,
       .default_json = "false",
       .help = "Divide gradients by world size before the reduction instead of after.",
       ZT_FIELD(prescale_gradients)},
      {.path = "gradient_predivide_factor",
       .type = kFloat,
       .default_json = "1.0",
       .min = 0,
       .min_exclusive = true,
       .help = "Divide gradients by this before the reduction and by world/factor after.",
       ZT_FIELD(gradient_predivide_factor)},
      {.path = "gradient_allreduce_op",
       .type = kString,
       .default_json = "\"mean\"",
       .choices = "mean|sum",
       .help = "Gradient reduction: mean or sum (sum not with ZeRO-3).",
       ZT_FIELD(gradient_allreduce_op)},
      {.path = "communication_data_type",
       .type = kString,
       .choices = "fp32|fp16|bf16",
       .nullable = true,
       .help = "Dtype the gradient reductions run in (all-reduce, reduce-scatter; each ring "
               "step's partial sum is rounded to it). null: the model dtype, as DeepSpeed: "
               "bf16/fp16 runs reduce 2 bytes an element; fp32 keeps a 16-bit model's "
               "reductions in fp32.",
       ZT_FIELD(communication_data_type)},
      {.path = "dataloader_drop_last",
       .type = kBool,
       .default_json = "false",
       .help = "Drop the last incomplete batch of an epoch.",
       ZT_FIELD(dataloader_drop_last)},
      {.path = "zero_allow_untested_optimizer",
       .type = kBool,
       .default_json = "false",
       .support = kInert,
       .help = "DeepSpeed: allow client optimizers outside its tested list. zerotrain builds "
               "its own optimizers."},
      {.path = "zero_force_ds_cpu_optimizer",
       .type = kBool,
       .default_json = "true",
       .support = kInert,
       .help = "DeepSpeed: require DeepSpeedCPUAdam with offload. zerotrain's CPU optimizer "
               "is always its own."},
      {.path = "log_level",
       .type = kString,
       .choices = "debug|info|warning|error|critical",
       .support = kInert,
       .nullable = true,
       .help = "DeepSpeed logger level; zerotrain's is set by ZEROTRAIN_LOG_LEVEL."},
      {.path = "sparse_gradients",
       .type = kBool,
       .default_json = "false",
       .support = kInert,
       .warn = "a communication format for embedding gradients (only the rows a batch "
               "touched); the reduced values are the same, and zerotrain reduces them densely",
       .help = "Reduce embedding gradients as sparse tensors (only the rows a batch touched); "
               "the same values as dense, so accepted with a warning."},
      {.path = "dump_state",
       .type = kBool,
       .default_json = "false",
       .support = kInert,
       .warn = "prints DeepSpeed's engine state after initialization; `zerotrain config check "
               "FILE` prints zerotrain's effective config",
       .help = "Print DeepSpeed's state after initialization; accepted with a warning."},
      {.path = "disable_allgather",
       .type = kBool,
       .default_json = "false",
       .support = kInert,
       .warn = "a legacy ZeRO-1 switch DeepSpeed still parses but no longer uses (its old stage "
               "1 was removed in 0.5.9)",
       .help = "A legacy ZeRO-1 switch DeepSpeed parses and no longer uses; accepted with a "
               "warning."},
      {.path = "checkpoint", .type = kSection, .help = "Checkpoint options."},
      {.path = "checkpoint.tag_validation",
       .type = kString,
       .default_json = "\"Warn\"",
       .choices = "Ignore|Warn|Fail",
       .help = "Check the checkpoint tag is identical on every rank: Ignore, Warn or Fail.",
       ZT_FIELD(checkpoint.tag_validation)},
      {.path = "checkpoint.use_node_local_storage",
       .type = kBool,
       .default_json = "false",
       .support = kUnsupported,
       .help = "Each node writes its own shards to node-local storage (zerotrain's checkpoints "
               "need a directory all ranks share).",
       ZT_FIELD(checkpoint.use_node_local_storage)},
      {.path = "checkpoint.load_universal",
       .type = kBool,
       .default_json = "false",
       .support = kUnsupported,
       .help = "Load a DeepSpeed universal checkpoint (zerotrain checkpoints reshard natively)."},
      {.path = "checkpoint.parallel_write",
       .type = kOpaque,
       .support = kUnsupported,
       .nullable = true,
       .help = "Pipeline-parallel checkpoint writing (pipeline_stage)."},
      {.path = "checkpoint.writer",
       .type = kOpaque,
       .support = kInert,
       .nullable = true,
       .warn = "DeepSpeed's checkpoint I/O engine (type, buffers, decoupled writes); "
               "zerotrain writes its own sharded, atomic checkpoints",
       .help = "DeepSpeed's checkpoint writer engine; accepted with a warning."},
      {.path = "checkpoint.serialization",
       .type = kBool,
       .default_json = "true",
       .support = kInert,
       .help = "torch.save's zipfile format (false: the legacy one); zerotrain's checkpoint "
               "format is its own."},
      {.path = "data_types", .type = kSection, .help = "Dtypes of internal buffers."},
      {.path = "data_types.grad_accum_dtype",
       .type = kString,
       .choices = "fp32|fp16|bf16",
       .nullable = true,
       .help = "Dtype gradients accumulate in; null: the model dtype.",
       ZT_FIELD(grad_accum_dtype)},
      {.path = "data_types.param_dtype",
       .type = kString,
       .choices = "fp32|fp16|bf16",
       .support = kUnsupported,
       .nullable = true,
       .help = "Dtype the model's parameters are cast to at initialization (null: as "
               "loaded)."},
      {.path = "data_types.buffer_dtype",
       .type = kString,
       .choices = "fp32|fp16|bf16",
       .support = kUnsupported,
       .nullable = true,
       .help = "Dtype of the model's non-parameter buffers (null: as loaded)."},
      {.path = "managed_gradient_accumulation",
       .type = kBool,
       .default_json = "true",
       .support = kUnsupported,
       .refusal = "zerotrain's trainer always steps every gradient_accumulation_steps micro "
                  "batches; remove it or set true",
       .help = "false: the training script decides the accumulation boundary by calling "
               "step() itself."},
      {.path = "graph_harvesting",
       .type = kBool,
       .default_json = "false",
       .support = kInert,
       .help = "Capture the gradient-norm and overflow checks as an accelerator graph (Gaudi "
               "HPU graphs); a launch-overhead knob with no effect on the result."},
      {.path = "vocabulary_size",
       .type = kInt,
       .support = kInert,
       .nullable = true,
       .help = "Read by DeepSpeed only to warn when it is not a multiple of 8; zerotrain takes "
               "the vocabulary from the model."},
      {.path = "_zerotrain",
       .type = kOpaque,
       .support = kInert,
       .nullable = true,
       .help = "Metadata written by `zerotrain config check` (world_size, resolved_from_auto, "
               "warnings); ignored when read, so an effective config can be fed back."},
  };
  out.insert(out.end(), std::begin(keys), std::end(keys));
}

namespace {

void add_fp16_keys(std::vector<KeySpec>& out) {
  const KeySpec keys[] = {
      {.path = "fp16",
       .type = kSection,
       .help = "fp16 mixed precision with a loss scaler; fp32 master weights and states."},
      {.path = "fp16.enabled",
       .type = kBool,
       .default_json = "false",
       .auto_ok = true,
       .help = "Train in fp16. auto: TrainerArgs fp16.",
       ZT_FIELD(fp16.enabled)},
      {.path = "fp16.loss_scale",
       .type = kFloat,
       .default_json = "0",
       .min = 0,
       .help = "0: dynamic loss scaling; > 0: this static scale.",
       ZT_FIELD(fp16.loss_scale)},
      {.path = "fp16.initial_scale_power",
       .type = kInt,
       .default_json = "16",
       .min = 0,
       .max = 64,
       .help = "Dynamic scaling starts at 2^this.",
       ZT_FIELD(fp16.initial_scale_power)},
      {.path = "fp16.loss_scale_window",
       .type = kInt,
       .default_json = "1000",
       .min = 1,
       .help = "Clean steps before the dynamic scale doubles.",
       ZT_FIELD(fp16.loss_scale_window)},
      {.path = "fp16.hysteresis",
       .type = kInt,
       .default_json = "2",
       .min = 1,
       .help = "Overflows tolerated before the scale halves.",
       ZT_FIELD(fp16.hysteresis)},
      {.path = "fp16.consecutive_hysteresis",
       .type = kBool,
       .default_json = "false",
       .help = "Refill the hysteresis on every clean step (count only consecutive overflows).",
       ZT_FIELD(fp16.consecutive_hysteresis)},
      {.path = "fp16.min_loss_scale",
       .type = kFloat,
       .default_json = "1",
       .min = 0,
       .min_exclusive = true,
       .help = "The dynamic scale never goes below this.",
       ZT_FIELD(fp16.min_loss_scale)},
      {.path = "fp16.auto_cast",
       .type = kBool,
       .default_json = "false",
       .support = kInert,
       .help = "Cast floating-point module inputs to fp16; the inputs are token ids, which it "
               "leaves alone, so it changes nothing."},
      {.path = "fp16.fp16_master_weights_and_grads",
       .type = kBool,
       .default_json = "false",
       .support = kUnsupported,
       .rule_checked = true,
       .help = "Keep the optimizer's master weights and gradients in fp16 instead of fp32, "
               "every update rounded to fp16; at stages 1-2 only with ZeRO-Offload and "
               "DeepSpeedCPUAdam."},
  };
  out.insert(out.end(), std::begin(keys), std::end(keys));
}

void add_bf16_keys(std::vector<KeySpec>& out) {
  const KeySpec keys[] = {
      {.path = "bf16", .type = kSection, .help = "bf16 mixed precision (no loss scaler)."},
      {.path = "bfloat16",
       .type = kSection,
       .support = kDeprecated,
       .alias_of = "bf16",
       .help = "Old name of the bf16 section."},
      {.path = "bf16.enabled",
       .type = kBool,
       .default_json = "false",
       .auto_ok = true,
       .help = "Train in bf16. auto: TrainerArgs bf16.",
       ZT_FIELD(bf16.enabled)},
      {.path = "bf16.check_grad_overflow",
       .type = kBool,
       .default_json = "true",
       .help = "Skip the step when any gradient is inf/nan.",
       ZT_FIELD(bf16.check_grad_overflow)},
      {.path = "bf16.immediate_grad_update",
       .type = kBool,
       .default_json = "false",
       .support = kUnsupported,
       .help = "Apply each bf16 gradient to its fp32 accumulator as soon as backward produces "
               "it, instead of at the end of backward."},
      {.path = "bf16.bf16_master_weights_and_grads",
       .type = kBool,
       .default_json = "false",
       .support = kUnsupported,
       .rule_checked = true,
       .help = "Keep the ZeRO optimizer's master weights and gradients in bf16 instead of "
               "fp32; every update is then rounded to bf16."},
      {.path = "bf16.bf16_optimizer_states",
       .type = kBool,
       .default_json = "false",
       .support = kUnsupported,
       .rule_checked = true,
       .help = "Keep the optimizer states (Adam's moments) in bf16; needs "
               "bf16_master_weights_and_grads."},
  };
  out.insert(out.end(), std::begin(keys), std::end(keys));
  // fp16 keys copied into bf16 sections (older DeepSpeed read bf16 with
  // dict.get and ignored them): accepted, ignored, warned about (rules.cc).
  constexpr std::string_view kIgnored[] = {
      "bf16.loss_scale", "bf16.initial_scale_power",    "bf16.loss_scale_window",
      "bf16.hysteresis", "bf16.consecutive_hysteresis", "bf16.min_loss_scale",
      "bf16.auto_cast"};
  for (std::string_view path : kIgnored)
    out.push_back({.path = path,
                   .type = kOpaque,
                   .support = kInert,
                   .nullable = true,
                   .warn = "an fp16 key; bf16 does not scale the loss",
                   .help = "An fp16 key: ignored under bf16 (no loss scaling), with a warning."});
}

}  // namespace

void add_precision_keys(std::vector<KeySpec>& out) {
  add_fp16_keys(out);
  add_bf16_keys(out);
}

}  // namespace zerotrain::config
