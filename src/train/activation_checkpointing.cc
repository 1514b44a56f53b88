// Activation checkpointing's switch and log lines (see activation_checkpointing.h).
#include "train/activation_checkpointing.h"

#include <cstdio>

namespace zerotrain::train {

bool checkpointing_on(const config::Config& cfg, const TrainOptions& o) {
  return cfg.activation_checkpointing.enabled || o.gradient_checkpointing;
}

std::string describe_checkpointing(const config::Config& cfg, const TrainOptions& o,
                                   int64_t num_layers) {
  if (!checkpointing_on(cfg, o)) return "";
  const config::ActivationCheckpointingConfig& a = cfg.activation_checkpointing;
  const std::string p = "[zerotrain] activation checkpointing: ";
  std::string s = p + "on (" +
                  (a.enabled ? std::string("the ds_config's activation_checkpointing section")
                             : std::string("--gradient-checkpointing")) +
                  "): each of the " + std::to_string(num_layers) +
                  " blocks keeps only its input and is recomputed in the backward\n";
  if (a.partition_activations)
    s += p +
         "partition_activations: a no-op, as in DeepSpeed without model parallelism "
         "(zerotrain has none)\n";
  if (a.contiguous_memory_optimization)
    s += p +
         "contiguous_memory_optimization: the checkpoints are in one contiguous buffer "
         "already\n";
  if (a.cpu_checkpointing)
    s += p + "cpu_checkpointing: the CPU device's activations are in host memory already\n";
  if (a.number_checkpoints && *a.number_checkpoints != num_layers)
    s += p + "number_checkpoints " + std::to_string(*a.number_checkpoints) +
         " (DeepSpeed's buffer count) differs from the " + std::to_string(num_layers) +
         " blocks checkpointed\n";
  return s;
}

std::string format_recompute_line(int64_t stages, double seconds) {
  char buf[128];
  std::snprintf(buf, sizeof buf,
                "[zerotrain] activation checkpointing: recomputed %lld blocks in %.1f ms\n",
                static_cast<long long>(stages), seconds * 1e3);
  return buf;
}

}  // namespace zerotrain::train
