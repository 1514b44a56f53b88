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
                                         "hybrid_engine",
                                         "curriculum_learning",
                                         "data_efficiency",
                                         "elasticity",
                                         "autotuning",
                                         "nebula",
                                         "eigenvalue",
                                         "progressive_layer_drop",
                                         "quantize_training",
                                         "sequence_parallel",
                                         "fp8"};
  for (std::string_view name : kGated)
    out.push_back({.path = name,
                   .type = kOpaque,
                   .support = kUnsupported,
                   .nullable = true,
                   .gate = "enabled",
                   .help = "Accepted while `enabled` is false or absent."});
  // Monitors that report to a web service: zerotrain opens no connection
  // beyond its own ranks, so they are refused when on, naming what to use.
  for (std::string_view name : {"wandb", "comet"})
    out.push_back({.path = name,
                   .type = kOpaque,
                   .support = kUnsupported,
                   .nullable = true,
                   .gate = "enabled",
                   .refusal = "reports to a web service, and zerotrain makes no network "
                              "connections beyond its own ranks; log locally with --metrics "
                              "(JSON lines) instead",
                   .help = "Accepted while `enabled` is false or absent; refused when on (no "
                           "network)."});
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
      {.path = "aio",
       .type = kSection,
       .help = "Async I/O for NVMe offload; accepted and unused (NVMe offload is not "
               "supported)."},
      {.path = "aio.block_size",
       .type = kInt,
       .default_json = "1048576",
       .support = kInert,
       .help = "I/O block bytes."},
      {.path = "aio.queue_depth",
       .type = kInt,
       .default_json = "8",
       .support = kInert,
       .help = "I/O queue depth."},
      {.path = "aio.intra_op_parallelism",
       .type = kInt,
       .default_json = "1",
       .support = kInert,
       .help = "I/O threads."},
      {.path = "aio.single_submit",
       .type = kBool,
       .default_json = "false",
       .support = kInert,
       .help = "Submit requests one by one."},
      {.path = "aio.overlap_events",
       .type = kBool,
       .default_json = "true",
       .support = kInert,
       .help = "Overlap submission and completion."},
      {.path = "aio.use_gds",
       .type = kBool,
       .default_json = "false",
       .support = kInert,
       .help = "GPUDirect Storage."},
      {.path = "aio.thread_count",
       .type = kInt,
       .support = kInert,
       .nullable = true,
       .warn = "DeepSpeed's docs name it but its code never reads it (the key is "
               "intra_op_parallelism)",
       .help = "Named in DeepSpeed's docs, ignored by its code (and here, with a warning)."},
  };
  out.insert(out.end(), std::begin(keys), std::end(keys));
}

}  // namespace zerotrain::config
