// The adapter flags commands share: LoRA's --lora-* (`train`,
// `estimate`) and the 4-bit base's (`train`, `eval`, `generate`,
// `estimate`): HF's --load-in-4bit / --bnb-4bit-* and LLaMA-Factory's
// --quantization-bit 4 / --quantization-type / --double-quantization
// (README "LoRA" and "QLoRA").
//
//   LoraFlags l;  add_lora_flags(cmd, l);   Quant4Flags q;  add_quant4_flags(cmd, q);
//   ... after parsing: lora_config(l); quant4_options(cmd, q);
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "device/quant4.h"
#include "model/lora_config.h"

namespace zerotrain::cli {

// LoRA: --lora-r > 0 turns it on (LLaMA-Factory's finetuning_type lora).
struct LoraFlags {
  int64_t r = 0;
  double alpha = 0, dropout = 0;
  std::string target = "all-linear", modules_to_save;
  bool use_rslora = false;
};

// `verb` starts --lora-r's help ("train", "count").
void add_lora_flags(CLI::App* cmd, LoraFlags& f, const std::string& verb);

// PEFT's config from the flags: target_modules from --lora-target ("all"
// / "all-linear", one regex, or comma-separated names), alpha 2·r unless given.
model::LoraConfig lora_config(const LoraFlags& f);

std::vector<std::string> split_commas(const std::string& s);

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
