// The 4-bit base flags (see quant4_flags.h).
#include "cli/quant4_flags.h"

namespace zerotrain::cli {

void add_quant4_flags(CLI::App* cmd, Quant4Flags& f) {
  cmd->add_flag("--load-in-4bit,--load_in_4bit", f.load_in_4bit,
                "QLoRA: hold the frozen Linear weights but lm_head 4-bit (bitsandbytes' format, "
                "blocksize 64), decoded for each GEMM");
  cmd->add_option("--quantization-bit,--quantization_bit", f.quantization_bit,
                  "LLaMA-Factory's spelling of --load-in-4bit (only 4)");
  cmd->add_option("--bnb-4bit-quant-type,--bnb_4bit_quant_type,--quantization-type,"
                  "--quantization_type",
                  f.quant_type, "the 4-bit code")
      ->check(CLI::IsMember({"nf4", "fp4"}))
      ->capture_default_str();
  cmd->add_option("--bnb-4bit-use-double-quant,--bnb_4bit_use_double_quant,"
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
  return std::optional<device::Quant4Options>(device::Quant4Options{
      .type = f.quant_type == "fp4" ? device::Quant4Type::kFp4 : device::Quant4Type::kNf4,
      .double_quant = f.double_quant});
}

}  // namespace zerotrain::cli
