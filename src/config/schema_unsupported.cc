// Schema table, part 4: DeepSpeed sections zerotrain does not implement.
// They are known, so a config copied from a DeepSpeed project passes while
// they are absent, disabled or at their defaults; anything that would change
// behaviour "is not supported by zerotrain", with what it does in DeepSpeed.
#include "config/schema.h"

namespace zerotrain::config {

using enum ValueType;
using enum Support;

void add_unsupported_sections(std::vector<KeySpec>& out) {
  // Sections switched on by an "enabled" key: accepted while it is false or
  // absent (their other keys are then not read, by DeepSpeed or by us).
  struct Section {
    std::string_view name, meaning;
  };
  static constexpr Section kGated[] = {
      {"amp", "NVIDIA Apex automatic mixed precision"},
      {"torch_autocast", "torch.autocast around the forward, lower precision per op"},
      {"hybrid_engine", "DeepSpeed-Chat's switch between training and inference kernels"},
      {"curriculum_learning", "legacy curriculum learning: sequence length grows by schedule"},
      {"data_efficiency", "data sampling and routing schedules (curriculum, random-LTD)"},
      {"elasticity", "batch sizes computed for a range of GPU counts"},
      {"autotuning", "the autotuner, which launches trial runs to pick ZeRO settings"},
      {"nebula", "Azure Nebula asynchronous checkpoint service"},
      {"eigenvalue", "Hessian eigenvalue monitor for quantization schedules"},
      {"progressive_layer_drop", "progressive layer dropping of transformer blocks"},
      {"quantize_training", "MoQ: weights quantized during training"},
      {"sequence_parallel",
       "LLaMA-Factory's ALST/Ulysses block: each sequence split across ranks (DeepSpeed itself "
       "reads only sequence_parallel_size; LLaMA-Factory sets it up from this block)"},
      {"fp8", "fp8 training through Transformer Engine"},
      {"expert_parallel", "AutoEP: Mixture-of-Experts layers split across ranks"}};
  for (const Section& s : kGated)
    out.push_back({.path = s.name,
                   .type = kOpaque,
                   .support = kUnsupported,
                   .nullable = true,
                   .gate = "enabled",
                   .meaning = s.meaning,
                   .help = "Accepted while `enabled` is false or absent."});
  // Monitors that report to a web service: zerotrain opens no connection
  // beyond its own ranks, so they are refused when on, naming what to use.
  static constexpr Section kWeb[] = {{"wandb", "Weights & Biases monitoring"},
                                     {"comet", "Comet ML monitoring"}};
  for (const Section& s : kWeb)
    out.push_back({.path = s.name,
                   .type = kOpaque,
                   .support = kUnsupported,
                   .nullable = true,
                   .gate = "enabled",
                   .refusal = "it reports to a web service, and zerotrain makes no network "
                              "connections beyond its own ranks; log locally with --metrics "
                              "(JSON lines) instead",
                   .meaning = s.meaning,
                   .help = "Accepted while `enabled` is false or absent; refused when on (no "
                           "network)."});
  out.push_back({.path = "compile",
                 .type = kOpaque,
                 .support = kUnsupported,
                 .nullable = true,
                 .gate = "deepcompile",
                 .meaning = "DeepCompile: torch.compile passes that schedule ZeRO's collectives",
                 .help = "torch.compile settings; accepted while `deepcompile` is false or "
                         "absent."});
  // Sections with no switch: accepted only when empty.
  static constexpr Section kEmptyOnly[] = {
      {"pipeline", "pipeline parallelism: layers split into stages across ranks"},
      {"sparse_attention", "block-sparse attention kernels"},
      {"compression_training", "quantization, pruning and distillation during training"},
      {"weight_quantization", "weights stored quantized (ZeRO-Inference)"}};
  for (const Section& s : kEmptyOnly)
    out.push_back({.path = s.name,
                   .type = kOpaque,
                   .support = kUnsupported,
                   .nullable = true,
                   .meaning = s.meaning,
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
