// AdapterPlan: how LoRA (lora_config.h) splits a model's parameters into a
// trainable space and a frozen one. The family builds its natural layout
// (the base: every HF tensor); the plan derives from it the layout ZeRO,
// the optimizer and checkpoints see (Module::layout()), which holds only
// what trains: per adapted Linear W [out,in] a lora_A [r,in] and a lora_B
// [out,r], and a full copy of each modules_to_save tensor. Everything else
// is frozen: it has no gradient, master weight or optimizer state, and the
// module keeps it in its frozen store (values loaded once, never reduced).
// The store is one block of bytes per group (what ZeRO-3 partitions and
// gathers with the group): the group's fp32 frozen tensors at 64-byte
// aligned offsets, then its 4-bit weights, each padded to 16 bytes.
//
//   ZT_ASSIGN_OR_RETURN(AdapterPlan plan, plan_adapters(base, cfg, "transformer."));
//   plan.trainable.groups().size() == base.groups().size();   // one per stage
//   plan.of_base[t.index].lora_a;   // trainable index of W's lora_A, or -1
//
// Groups mirror the base's one for one (a group may hold no trainable
// tensor, numel 0), so stage s still computes with group s. Trainable
// names: "<module>.lora_A.weight", "<module>.lora_B.weight" (module = the
// base tensor's name without ".weight"), and the base name for a copy.
//
// QLoRA (plan_adapters' quant4): every frozen Linear weight but the lm
// head (bitsandbytes' rule: lm_head stays in the compute dtype) is held
// 4-bit (device/quant4.h) instead of in the fp32 frozen store; its biases,
// norms and embeddings stay fp32.
//
// Thread-safety: a value type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "device/quant4.h"
#include "model/lora_config.h"
#include "model/param_layout.h"

namespace zerotrain::model {

struct AdaptedTensor {
  int trainable = -1;      // the trainable copy (modules_to_save), else -1
  int lora_a = -1;         // an adapted Linear's lora_A / lora_B, else -1
  int lora_b = -1;
  int64_t frozen = -1;     // byte offset in its group's frozen block, else -1 (trains)
  int quant4 = -1;         // index in AdapterPlan::quantized (held 4-bit), else -1
};

struct AdapterPlan {
  LoraConfig config;
  float scale = 1.0f;  // config.scale()
  ParamLayout trainable;
  std::vector<AdaptedTensor> of_base;  // [base tensors]
  std::vector<int> base_of;            // [trainable tensors]: the base tensor it adapts or copies
  std::vector<int64_t> frozen_group_bytes;  // [groups] bytes of each group's frozen block
  int64_t frozen_params = 0;           // elements of the frozen tensors, without alignment
  int adapted_linears = 0;
  std::optional<device::Quant4Options> quant4;  // QLoRA: the 4-bit base's format
  std::vector<int> quantized;                   // base tensors held 4-bit
  int64_t quantized_params = 0;                 // their elements (part of frozen_params)
};

// hf_prefix: what the family's HF model puts before the layout's names
// ("transformer." for GPT-2, "" for Llama), so PEFT's full module names
// match. InvalidArgument (naming the modules that exist) when the targets
// match no Linear, match a module that is not a supported Linear (norms,
// embeddings, the lm head: use modules_to_save), or modules_to_save match
// nothing; or for an invalid config. quant4: hold the frozen Linear
// weights 4-bit (QLoRA).
StatusOr<AdapterPlan> plan_adapters(const ParamLayout& base, const LoraConfig& config,
                                    const std::string& hf_prefix,
                                    const std::optional<device::Quant4Options>& quant4 = {});

// What family `family` prefixes its layout names with in its HF model:
// "transformer." for gpt2, "" otherwise (PEFT's full module names).
std::string family_hf_prefix(std::string_view family);

// The 4-bit code tables every rank keeps whole (0 without 4-bit weights).
int64_t frozen_code_table_bytes(const AdapterPlan& plan);
// Bytes of the frozen store Module allocates for `plan`: every group's
// block and, with 4-bit weights, the code tables once (what `zerotrain
// estimate` counts; Module::frozen_bytes).
int64_t frozen_store_bytes(const AdapterPlan& plan);
// The same when ZeRO-3 partitions each block over `world` ranks: a rank's
// share of every group (Stage3Strategy's frozen partition: the block as
// floats, padded to a multiple of world) plus the code tables, which every
// rank keeps.
int64_t frozen_partition_bytes(const AdapterPlan& plan, int world);
// Floats of one rank's chunk of a frozen block of `bytes` bytes over `world` ranks.
int64_t frozen_chunk_floats(int64_t bytes, int world);

// Whether QLoRA holds base tensor t 4-bit when it is frozen: a Linear
// weight other than lm_head (bitsandbytes' Linear4bit rule).
bool held_4bit_when_frozen(const TensorInfo& t);

// A base checksum as manifests record it: 8 lowercase hex digits.
std::string crc32_hex(uint32_t crc);

// The HF module name of base tensor t ("model.layers.0.self_attn.q_proj").
std::string hf_module_name(const TensorInfo& t, const std::string& hf_prefix);

}  // namespace zerotrain::model
