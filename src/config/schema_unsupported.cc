// Schema table, part 4: DeepSpeed sections zerotrain does not implement.
// They are known, so a config copied from a DeepSpeed project passes while
// they are absent, disabled or at their defaults; anything that would change
// behaviour is "a DeepSpeed option zerotrain does not support yet".
#include "config/schema.h"

namespace zerotrain::config {

using enum ValueType;
using enum Support;

void add_unsupported_sections(std::vector<KeySpec>& out) {
  // Sections switched on by an "enabled" key: accepted while it is false or
  // absent (their other keys are then not read, by DeepSpeed or by us).
  constexpr std::string_view kGated[] = {"amp",
                                         "torch_autocast",
                                         "flops_profiler",
                                         "tensorboard",
                                         "wandb",
                                         "csv_monitor",
                                         "comet",
                                         "comms_logger",
                                         "hybrid_engine",
                                         "curriculum_learning",
                                         "data_efficiency",
                                         "elasticity",
                                         "autotuning",
                                         "nebula",
                                         "eigenvalue",
                                         "progressive_layer_drop",
                                         "quantize_training"};
  for (std::string_view name : kGated)
    out.push_back({.path = name,
                   .type = kOpaque,
                   .support = kUnsupported,
                   .nullable = true,
                   .gate = "enabled",
                   .help = "Accepted while `enabled` is false or absent."});
  out.push_back({.path = "compile",
                 .type = kOpaque,
                 .support = kUnsupported,
                 .nullable = true,
                 .gate = "deepcompile",
                 .help = "torch.compile settings; accepted while `deepcompile` is false or "
                         "absent."});
  // Sections with no switch: accepted only when empty.
  constexpr std::string_view kEmptyOnly[] = {"pipeline", "sparse_attention", "compression_training",
                                             "weight_quantization"};
  for (std::string_view name : kEmptyOnly)
    out.push_back({.path = name,
                   .type = kOpaque,
                   .support = kUnsupported,
                   .nullable = true,
                   .help = "Accepted only when empty."});

  const KeySpec keys[] = {
      {.path = "activation_checkpointing",
       .type = kSection,
       .help = "DeepSpeed's activation checkpointing (not implemented)."},
      {.path = "activation_checkpointing.partition_activations",
       .type = kBool,
       .default_json = "false",
       .support = kUnsupported,
       .help = "Split across MP ranks."},
      {.path = "activation_checkpointing.contiguous_memory_optimization",
       .type = kBool,
       .default_json = "false",
       .support = kUnsupported,
       .help = "Contiguous buffers."},
      {.path = "activation_checkpointing.cpu_checkpointing",
       .type = kBool,
       .default_json = "false",
       .support = kUnsupported,
       .help = "Keep them on the host."},
      {.path = "activation_checkpointing.number_checkpoints",
       .type = kInt,
       .support = kUnsupported,
       .nullable = true,
       .help = "Checkpoint count."},
      {.path = "activation_checkpointing.synchronize_checkpoint_boundary",
       .type = kBool,
       .default_json = "false",
       .support = kUnsupported,
       .help = "Synchronize at boundaries."},
      {.path = "activation_checkpointing.profile",
       .type = kBool,
       .default_json = "false",
       .support = kUnsupported,
       .help = "Time checkpointing."},
      {.path = "aio", .type = kSection, .help = "Async I/O for NVMe offload (not implemented)."},
      {.path = "aio.block_size",
       .type = kInt,
       .default_json = "1048576",
       .support = kUnsupported,
       .help = "I/O block bytes."},
      {.path = "aio.queue_depth",
       .type = kInt,
       .default_json = "8",
       .support = kUnsupported,
       .help = "I/O queue depth."},
      {.path = "aio.intra_op_parallelism",
       .type = kInt,
       .default_json = "1",
       .support = kUnsupported,
       .help = "I/O threads."},
      {.path = "aio.single_submit",
       .type = kBool,
       .default_json = "false",
       .support = kUnsupported,
       .help = "Submit requests one by one."},
      {.path = "aio.overlap_events",
       .type = kBool,
       .default_json = "true",
       .support = kUnsupported,
       .help = "Overlap submission and completion."},
      {.path = "aio.use_gds",
       .type = kBool,
       .default_json = "false",
       .support = kUnsupported,
       .help = "GPUDirect Storage."},
      {.path = "aio.thread_count",
       .type = kInt,
       .support = kRejected,
       .help = "is named in DeepSpeed's docs but its code ignores it; the key is "
               "intra_op_parallelism"},
  };
  out.insert(out.end(), std::begin(keys), std::end(keys));
}

}  // namespace zerotrain::config
