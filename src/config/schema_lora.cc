// Schema table, part 6: zerotrain's "lora" section, PEFT's LoraConfig names
// (adapter_config.json), for LoRA fine-tuning over a frozen base
// (model/lora_config.h). DeepSpeed has no such section; HF Trainer users
// set these on a peft.LoraConfig, LLaMA-Factory users as lora_rank,
// lora_alpha, lora_dropout, lora_target, additional_target.
#include "config/json_value.h"
#include "config/schema.h"

namespace zerotrain::config {

using enum ValueType;

void add_lora_keys(std::vector<KeySpec>& out) {
  const KeySpec keys[] = {
      {.path = "lora",
       .type = kSection,
       .nullable = true,
       .help = "zerotrain's: train LoRA adapters (y = Wx + s·B·A·x) over a frozen base, as "
               "PEFT's LoraConfig; checkpoints hold the adapters only, `checkpoint export "
               "--adapter` writes PEFT's adapter directory. `train --lora-*` overrides."},
      {.path = "lora.r",
       .type = kInt,
       .default_json = "0",
       .min = 0,
       .help = "Adapter rank (LLaMA-Factory's lora_rank); 0: full fine-tuning.",
       ZT_FIELD(lora.r)},
      {.path = "lora.lora_alpha",
       .type = kFloat,
       .default_json = "null",
       .min = 0,
       .min_exclusive = true,
       .nullable = true,
       .help = "Scale numerator: s = lora_alpha / r (null: 2·r, LLaMA-Factory's default).",
       ZT_FIELD(lora.lora_alpha)},
      {.path = "lora.lora_dropout",
       .type = kFloat,
       .default_json = "0.0",
       .min = 0,
       .max = 0,
       .help = "Dropout on the adapter's input; only 0 is implemented (PEFT's default).",
       ZT_FIELD(lora.lora_dropout)},
      {.path = "lora.target_modules",
       .type = kStringList,
       .default_json = "[\"all-linear\"]",
       .help = "Modules to adapt, PEFT's rules: names matched as suffixes (q_proj, v_proj), "
               "[\"all-linear\"] (every Linear but lm_head), or one regex over full module "
               "names (any of * ( | \\ in the single entry).",
       ZT_FIELD(lora.target_modules)},
      {.path = "lora.use_rslora",
       .type = kBool,
       .default_json = "false",
       .help = "Rank-stabilised scale lora_alpha / sqrt(r).",
       ZT_FIELD(lora.use_rslora)},
      {.path = "lora.modules_to_save",
       .type = kStringList,
       .default_json = "[]",
       .help = "Modules trained fully beside the adapters (e.g. lm_head, embed_tokens; "
               "LLaMA-Factory's additional_target).",
       ZT_FIELD(lora.modules_to_save)},
      {.path = "lora.init_lora_weights",
       .type = kString,
       .default_json = "\"kaiming\"",
       .choices = "kaiming|gaussian",
       .help = "lora_A's init: kaiming-uniform (PEFT's true) or normal(0, 1/r); lora_B is 0.",
       ZT_FIELD(lora.init_lora_weights)},
      {.path = "lora.load_in_4bit",
       .type = kBool,
       .default_json = "false",
       .help = "QLoRA: hold the frozen Linear weights but lm_head 4-bit in bitsandbytes' "
               "blockwise format (blocksize 64), decoded for each GEMM; the compute dtype is "
               "the run's (bf16 section, else fp32). LLaMA-Factory's quantization_bit 4.",
       ZT_FIELD(lora.load_in_4bit)},
      {.path = "lora.bnb_4bit_quant_type",
       .type = kString,
       .default_json = "\"nf4\"",
       .choices = "nf4|fp4",
       .help = "The 4-bit code: NormalFloat4 (QLoRA's; LLaMA-Factory's default) or FP4 "
               "(BitsAndBytesConfig's default).",
       ZT_FIELD(lora.bnb_4bit_quant_type)},
      {.path = "lora.bnb_4bit_use_double_quant",
       .type = kBool,
       .default_json = "true",
       .help = "Store the per-block scales 8-bit too (~0.37 bits a parameter less; "
               "LLaMA-Factory's double_quantization default).",
       ZT_FIELD(lora.bnb_4bit_use_double_quant)},
  };
  out.insert(out.end(), std::begin(keys), std::end(keys));
}

}  // namespace zerotrain::config
