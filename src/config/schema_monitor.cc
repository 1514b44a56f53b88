// Schema table, part 5: the monitor sections zerotrain implements
// (csv_monitor, tensorboard, comms_logger), the flops profiler and DeepSpeed's timers. wandb and
// comet are refused when on (schema_unsupported.cc).
#include "config/json_value.h"
#include "config/schema.h"

namespace zerotrain::config {

using enum ValueType;
using enum Support;

void add_monitor_keys(std::vector<KeySpec>& out) {
  const KeySpec keys[] = {
      {.path = "csv_monitor",
       .type = kSection,
       .nullable = true,
       .help = "Rank 0 appends each step's metrics to one CSV file per metric, as DeepSpeed's "
               "csv_monitor: OUTPUT_PATH/JOB_NAME/Train_Samples_<metric>.csv, `step,<metric>` "
               "rows where step counts samples."},
      {.path = "csv_monitor.enabled",
       .type = kBool,
       .default_json = "false",
       .help = "Write the CSV files.",
       ZT_FIELD(csv_monitor.enabled)},
      {.path = "csv_monitor.output_path",
       .type = kString,
       .default_json = "\"\"",
       .help = "Directory for the job's folder (\"\": the working directory).",
       ZT_FIELD(csv_monitor.output_path)},
      {.path = "csv_monitor.job_name",
       .type = kString,
       .default_json = "\"DeepSpeedJobName\"",
       .help = "The folder under output_path.",
       ZT_FIELD(csv_monitor.job_name)},
      {.path = "tensorboard",
       .type = kSection,
       .nullable = true,
       .help = "Rank 0 writes each step's metrics as scalars to a TensorBoard event file, as "
               "DeepSpeed's TensorBoard monitor (PyTorch's SummaryWriter): "
               "OUTPUT_PATH/JOB_NAME/events.out.tfevents.<time>.<host>.<pid>.0, tags "
               "Train/Samples/<metric>, step = samples."},
      {.path = "tensorboard.enabled",
       .type = kBool,
       .default_json = "false",
       .help = "Write the event file.",
       ZT_FIELD(tensorboard.enabled)},
      {.path = "tensorboard.output_path",
       .type = kString,
       .default_json = "\"\"",
       .help = "Directory for the job's folder (\"\": the working directory).",
       ZT_FIELD(tensorboard.output_path)},
      {.path = "tensorboard.job_name",
       .type = kString,
       .default_json = "\"DeepSpeedJobName\"",
       .help = "The folder under output_path (TensorBoard's --logdir takes output_path).",
       ZT_FIELD(tensorboard.job_name)},
      {.path = "comms_logger",
       .type = kSection,
       .nullable = true,
       .help = "Time every collective; rank 0 prints DeepSpeed's log_summary table (op, message "
               "size, count, total and mean latency, algbw, busbw) after the last step."},
      {.path = "comms_logger.enabled",
       .type = kBool,
       .default_json = "false",
       .help = "Log collectives.",
       ZT_FIELD(comms_logger.enabled)},
      {.path = "comms_logger.verbose",
       .type = kBool,
       .default_json = "false",
       .help = "Also a line per collective as it completes (rank 0).",
       ZT_FIELD(comms_logger.verbose)},
      {.path = "comms_logger.prof_all",
       .type = kBool,
       .default_json = "true",
       .help = "Time every collective; false: only those in prof_ops.",
       ZT_FIELD(comms_logger.prof_all)},
      {.path = "comms_logger.prof_ops",
       .type = kStringList,
       .default_json = "[]",
       .choices = "all_reduce|reduce_scatter|reduce_scatter_tensor|all_gather|"
                  "all_gather_into_tensor|broadcast|barrier",
       .help = "The collectives to time when prof_all is false.",
       ZT_FIELD(comms_logger.prof_ops)},
      {.path = "comms_logger.debug",
       .type = kBool,
       .default_json = "false",
       .support = kInert,
       .warn = "records are named by collective only (zerotrain has no caller function to add)",
       .help = "DeepSpeed adds the calling function to each record; accepted, with a warning."},
      {.path = "flops_profiler",
       .type = kSection,
       .nullable = true,
       .help = "At one optimizer step, rank 0 prints DeepSpeed's flops profile: the summary "
               "(params, fwd MACs and flops, fwd/bwd/step latency, FLOPS, samples/s), the top "
               "modules per depth and the per-module tree. zerotrain's modules are its stages: "
               "the embeddings, each block, the head (depth 1 under the model). Also turns on "
               "the optimizer-step timer lines of wall_clock_breakdown, as DeepSpeed does."},
      {.path = "flops_profiler.enabled",
       .type = kBool,
       .default_json = "false",
       .help = "Profile.",
       ZT_FIELD(flops_profiler.enabled)},
      {.path = "flops_profiler.profile_step",
       .type = kInt,
       .default_json = "1",
       .min = 0,
       .help = "DeepSpeed's global_steps at which to profile (0-based: 1 profiles the second "
               "optimizer step, after warm-up).",
       ZT_FIELD(flops_profiler.profile_step)},
      {.path = "flops_profiler.module_depth",
       .type = kInt,
       .default_json = "-1",
       .min = -1,
       .help = "Deepest module level printed; -1: all.",
       ZT_FIELD(flops_profiler.module_depth)},
      {.path = "flops_profiler.top_modules",
       .type = kInt,
       .default_json = "1",
       .min = 1,
       .help = "Modules listed per depth in the aggregated profile.",
       ZT_FIELD(flops_profiler.top_modules)},
      {.path = "flops_profiler.detailed",
       .type = kBool,
       .default_json = "true",
       .help = "Print the per-module tree.",
       ZT_FIELD(flops_profiler.detailed)},
      {.path = "flops_profiler.recompute_fwd_factor",
       .type = kFloat,
       .default_json = "0.0",
       .min = 0,
       .help = "Forward passes recomputed per step (activation checkpointing: 1.0); the fwd+bwd "
               "FLOPS count (3 + this) x the forward's flops.",
       ZT_FIELD(flops_profiler.recompute_fwd_factor)},
      {.path = "flops_profiler.output_file",
       .type = kString,
       .default_json = "null",
       .nullable = true,
       .help = "Write the profile to this file (replaced atomically) instead of the log.",
       ZT_FIELD(flops_profiler.output_file)},
      {.path = "timers", .type = kSection, .help = "DeepSpeed's engine timers."},
      {.path = "timers.throughput", .type = kSection, .help = "The throughput timer."},
      {.path = "timers.throughput.enabled",
       .type = kBool,
       .default_json = "true",
       .support = kInert,
       .help = "DeepSpeed's samples/s timer; zerotrain always logs tokens/s."},
      {.path = "timers.throughput.synchronized",
       .type = kBool,
       .default_json = "true",
       .support = kInert,
       .help = "Synchronize the device before reading the timer."},
  };
  out.insert(out.end(), std::begin(keys), std::end(keys));
}

}  // namespace zerotrain::config
