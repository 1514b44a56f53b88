// Schema table, part 5: model parallelism DeepSpeed reads (AutoTP's
// tensor_parallel section, DeepSpeed-Ulysses' sequence_parallel_size, the
// MoE rank layout). zerotrain is data-parallel only so far: each key is
// accepted while it leaves its parallelism off, and a degree above 1 is
// refused, because a run that silently uses 1/N of the parallelism asked
// for is the worst kind of wrong answer.
#include "config/schema.h"

namespace zerotrain::config {

using enum ValueType;
using enum Support;

namespace {

constexpr std::string_view kNoTp =
    "zerotrain has no tensor parallelism yet and does not train without it silently; set "
    "autotp_size to 0 or remove the tensor_parallel section";

// DeepSpeed's runtime/tensor_parallel/config.py (TPTrainingConfig, TPConfig).
void add_tensor_parallel_keys(std::vector<KeySpec>& out) {
  const KeySpec keys[] = {
      {.path = "tensor_parallel",
       .type = kSection,
       .nullable = true,
       .help = "AutoTP training (DeepSpeed >= 0.16.4). Accepted while autotp_size is 0 or 1."},
      {.path = "tensor_parallel.autotp_size",
       .type = kInt,
       .default_json = "0",
       .min = 0,
       .support = kUnsupported,
       .refusal = kNoTp,
       .off_json = "1",
       .help = "AutoTP tensor parallelism: every linear layer split across this many "
               "ranks, 0 or 1 being off."},
      {.path = "tensor_parallel.tp_overlap_comm",
       .type = kBool,
       .default_json = "false",
       .support = kInert,
       .help = "Overlap AutoTP's all-reduce with compute; nothing to overlap while TP is off."},
      {.path = "tensor_parallel.dtype",
       .type = kString,
       .support = kInert,
       .nullable = true,
       .help = "The dtype AutoTP converts the model to; unused while TP is off (the run's "
               "dtype comes from fp16/bf16)."},
      {.path = "tensor_parallel.tp",
       .type = kSection,
       .nullable = true,
       .help = "DeepSpeed's nested TP settings."},
      {.path = "tensor_parallel.tensor_parallel",
       .type = kSection,
       .support = kAlias,
       .alias_of = "tensor_parallel.tp"},
      {.path = "tensor_parallel.tp.tp_size",
       .type = kInt,
       .default_json = "1",
       .min = 1,
       .support = kUnsupported,
       .refusal = kNoTp,
       .help = "The TP degree once more; DeepSpeed requires it to equal autotp_size."},
      {.path = "tensor_parallel.tp.tp_grain_size",
       .type = kInt,
       .default_json = "1",
       .min = 1,
       .support = kInert,
       .help = "Granularity of uneven MLP/lm_head splits; unused while TP is off."},
      {.path = "tensor_parallel.tp.mpu",
       .type = kOpaque,
       .support = kInert,
       .nullable = true,
       .help = "A Python model-parallel unit object; never given in JSON."},
      {.path = "tensor_parallel.tp.tp_group",
       .type = kOpaque,
       .support = kInert,
       .nullable = true,
       .help = "A Python process group; never given in JSON."},
      {.path = "tensor_parallel.injection_policy_tuple",
       .type = kOpaque,
       .support = kInert,
       .nullable = true,
       .help = "AutoTP parser input; unused while TP is off."},
      {.path = "tensor_parallel.partition_config",
       .type = kOpaque,
       .support = kInert,
       .nullable = true,
       .help = "Custom row/column partition rules; unused while TP is off."},
      {.path = "tensor_parallel.preset_model",
       .type = kString,
       .support = kInert,
       .nullable = true,
       .help = "A built-in partition preset (llama, qwen2, ...); unused while TP is off."},
      {.path = "tensor_parallel.keep_module_on_host",
       .type = kBool,
       .default_json = "false",
       .support = kInert,
       .help = "Keep loaded checkpoint tensors on the host while partitioning; unused while "
               "TP is off."},
      {.path = "tensor_parallel.replace_with_kernel_inject",
       .type = kBool,
       .default_json = "false",
       .support = kInert,
       .help = "Inject inference kernels; unused while TP is off."},
      {.path = "tensor_parallel.kernel_inject",
       .type = kBool,
       .support = kAlias,
       .alias_of = "tensor_parallel.replace_with_kernel_inject"},
  };
  out.insert(out.end(), std::begin(keys), std::end(keys));
}

}  // namespace

void add_parallel_keys(std::vector<KeySpec>& out) {
  add_tensor_parallel_keys(out);
  const KeySpec keys[] = {
      {.path = "sequence_parallel_size",
       .type = kInt,
       .default_json = "1",
       .min = 1,
       .support = kUnsupported,
       .refusal = "zerotrain has no sequence parallelism yet and does not train without it "
                  "silently; set 1 or remove it",
       .help = "Ulysses sequence parallelism: each sequence split across this many ranks, "
               "with all-to-alls to head shards around attention."},
      {.path = "seq_parallel_communication_data_type",
       .type = kString,
       .default_json = "\"fp32\"",
       .choices = "fp32|fp16|bf16",
       .support = kInert,
       .help = "Dtype of the Ulysses all-to-alls; no effect without sequence parallelism."},
      {.path = "use_data_before_expert_parallel_",
       .type = kBool,
       .default_json = "false",
       .support = kInert,
       .help = "MoE rank layout: data-parallel ranks before expert-parallel ones; zerotrain "
               "has no MoE layers."},
  };
  out.insert(out.end(), std::begin(keys), std::end(keys));
}

}  // namespace zerotrain::config
