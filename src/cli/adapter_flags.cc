// The adapter flags (see adapter_flags.h).
#include "cli/adapter_flags.h"

#include <algorithm>

namespace zerotrain::cli {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t comma = std::min(s.find(',', at), s.size());
    if (comma > at) out.push_back(s.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

void add_lora_flags(CLI::App* cmd, LoraFlags& f, const std::string& verb) {
  cmd->add_option("--lora-r,--lora_rank", f.r,
                  verb +
                      " LoRA adapters of rank R over a frozen base (PEFT's r; 0: full "
                      "fine-tuning)");
  cmd->add_option("--lora-alpha,--lora_alpha", f.alpha,
                  "LoRA alpha (default 2·r, LLaMA-Factory's); the scale is alpha/r");
  cmd->add_option("--lora-dropout,--lora_dropout", f.dropout,
                  "dropout on the adapter input (only 0 is implemented)");
  cmd->add_option("--lora-target,--lora_target", f.target,
                  "modules to adapt: comma-separated names (q_proj,v_proj), all / all-linear, or "
                  "one regex over full module names")
      ->capture_default_str();
  cmd->add_flag("--use-rslora,--use_rslora", f.use_rslora, "rank-stabilised scale alpha/sqrt(r)");
  cmd->add_option("--lora-modules-to-save,--additional_target", f.modules_to_save,
                  "modules trained fully next to the adapters (e.g. lm_head,embed_tokens)");
}

model::LoraConfig lora_config(const LoraFlags& f) {
  model::LoraConfig c{.r = f.r,
                      .alpha = f.alpha > 0 ? f.alpha : 2.0 * static_cast<double>(f.r),
                      .dropout = f.dropout,
                      .use_rslora = f.use_rslora};
  const bool regex = f.target.find_first_of("*(|\\") != std::string::npos;
  c.set_targets(regex ? std::vector<std::string>{f.target} : split_commas(f.target));
  c.modules_to_save = split_commas(f.modules_to_save);
  return c;
}

void add_quant4_flags(CLI::App* cmd, Quant4Flags& f) {
  cmd->add_flag("--load-in-4bit,--load_in_4bit", f.load_in_4bit,
                "QLoRA: hold the frozen Linear weights but lm_head 4-bit (bitsandbytes' format, "
                "blocksize 64), decoded for each GEMM");
  cmd->add_option("--quantization-bit,--quantization_bit", f.quantization_bit,
                  "LLaMA-Factory's spelling of --load-in-4bit (only 4)");
  cmd->add_option(
         "--bnb-4bit-quant-type,--bnb_4bit_quant_type,--quantization-type,"
         "--quantization_type",
         f.quant_type, "the 4-bit code")
      ->check(CLI::IsMember({"nf4", "fp4"}))
      ->capture_default_str();
  cmd->add_option(
         "--bnb-4bit-use-double-quant,--bnb_4bit_use_double_quant,"
         "--double-quantization,--double_quantization",
         f.double_quant, "store the per-block scales 8-bit too (true/false)")
      ->capture_default_str();
}

StatusOr<std::optional<device::Quant4Options>> quant4_options(const CLI::App* cmd,
                                                              const Quant4Flags& f) {
  if (f.quantization_bit != 0 && f.quantization_bit != 4)
    return invalid_argument("--quantization-bit " + std::to_string(f.quantization_bit) +
                            ": only 4 (QLoRA's NF4/FP4) is implemented; 8-bit LLM.int8 is not");
  if (!f.load_in_4bit && f.quantization_bit != 4 && cmd->count("--bnb-4bit-quant-type") == 0 &&
      cmd->count("--bnb-4bit-use-double-quant") == 0)
    return std::optional<device::Quant4Options>();
  ZT_ASSIGN_OR_RETURN(const device::Quant4Type type, device::parse_quant4_type(f.quant_type));
  return std::optional<device::Quant4Options>(
      device::Quant4Options{.type = type, .double_quant = f.double_quant});
}

}  // namespace zerotrain::cli
