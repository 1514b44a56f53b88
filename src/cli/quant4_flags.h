// The 4-bit base flags `train`, `eval` and `generate` share: HF's
// --load-in-4bit / --bnb-4bit-* and LLaMA-Factory's --quantization-bit 4 /
// --quantization-type / --double-quantization (README "QLoRA").
//
//   Quant4Flags q;  add_quant4_flags(cmd, q);
//   ... after parsing: StatusOr<std::optional<device::Quant4Options>> o = quant4_options(cmd, q);
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "core/status.h"
#include "device/quant4.h"

namespace zerotrain::cli {

struct Quant4Flags {
  bool load_in_4bit = false;
  int quantization_bit = 0;
  std::string quant_type = "nf4";  // LLaMA-Factory's default (BitsAndBytesConfig's is fp4)
  bool double_quant = true;        // LLaMA-Factory's default
};

void add_quant4_flags(CLI::App* cmd, Quant4Flags& f);

// nullopt unless a 4-bit flag was given (naming any of them asks for the
// 4-bit base); InvalidArgument for --quantization-bit other than 4.
StatusOr<std::optional<device::Quant4Options>> quant4_options(const CLI::App* cmd,
                                                              const Quant4Flags& f);

}  // namespace zerotrain::cli
