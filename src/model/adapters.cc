// plan_adapters: the trainable and frozen spaces of a LoRA model (see
// adapters.h).
#include "model/adapters.h"

#include <cstdio>
#include <set>

namespace zerotrain::model {
namespace {

bool is_linear_weight(const TensorInfo& t) {
  return (t.kind == ParamKind::kLinearWeight || t.kind == ParamKind::kResidualProjWeight) &&
         t.shape.size() == 2;
}

std::string join(const std::set<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

int64_t frozen_code_table_bytes(const AdapterPlan& plan) {
  return plan.quant4 ? device::kQuant4CodeTableBytes : 0;
}

int64_t frozen_store_bytes(const AdapterPlan& plan) {
  int64_t n = frozen_code_table_bytes(plan);
  for (int64_t b : plan.frozen_group_bytes) n += b;
  return n;
}

int64_t frozen_chunk_floats(int64_t bytes, int world) {
  const int64_t floats = (bytes + 3) / 4;
  return (floats + world - 1) / world;
}

int64_t frozen_partition_bytes(const AdapterPlan& plan, int world) {
  int64_t n = frozen_code_table_bytes(plan);
  for (int64_t b : plan.frozen_group_bytes) n += 4 * frozen_chunk_floats(b, world);
  return n;
}

bool held_4bit_when_frozen(const TensorInfo& t) {
  return is_linear_weight(t) && t.name != "lm_head.weight";
}

std::string crc32_hex(uint32_t crc) {
  char hex[16];
  std::snprintf(hex, sizeof(hex), "%08x", crc);
  return hex;
}

std::string family_hf_prefix(std::string_view family) {
  return family == "gpt2" ? "transformer." : "";
}

std::string hf_module_name(const TensorInfo& t, const std::string& hf_prefix) {
  std::string n = t.name;
  for (const char* suffix : {".weight", ".bias"}) {
    const std::string s = suffix;
    if (n.size() > s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0) {
      n.resize(n.size() - s.size());
      break;
    }
  }
  return hf_prefix + n;
}

StatusOr<AdapterPlan> plan_adapters(const ParamLayout& base, const LoraConfig& config,
                                    const std::string& hf_prefix,
                                    const std::optional<device::Quant4Options>& quant4) {
  ZT_RETURN_IF_ERROR(validate(config));
  if (config.dropout != 0.0)
    return invalid_argument(
        "lora: lora_dropout > 0 is not implemented yet (got " + std::to_string(config.dropout) +
        "); use 0, PEFT's and LLaMA-Factory's default");
  AdapterPlan plan;
  plan.config = config;
  plan.scale = static_cast<float>(config.scale());
  plan.quant4 = quant4;
  const auto& tensors = base.tensors();
  plan.of_base.resize(tensors.size());
  std::set<std::string> linears, saved_hits;
  std::vector<bool> lora(tensors.size(), false), saved(tensors.size(), false);
  for (const TensorInfo& t : tensors) {
    const std::string module = hf_module_name(t, hf_prefix);
    const bool output = t.name == "lm_head.weight";
    if (is_linear_weight(t) && !output) linears.insert(module.substr(module.rfind('.') + 1));
    if (config.saves(module)) {
      saved[static_cast<size_t>(t.index)] = true;
      saved_hits.insert(module);
    }
    const bool hit = config.all_linear ? is_linear_weight(t) && !output
                                       : config.targets(module, output);
    if (!hit || t.kind == ParamKind::kLinearBias) continue;
    if (output)
      return invalid_argument("lora: LoRA on " + module +
                              " (the output layer) is not implemented; train it fully with "
                              "modules_to_save=lm_head instead");
    if (!is_linear_weight(t))
      return invalid_argument("lora: target_modules match " + module +
                              ", which is not a Linear layer (LoRA adapts Linear layers; train "
                              "embeddings and norms fully with modules_to_save)");
    if (saved[static_cast<size_t>(t.index)])
      return invalid_argument("lora: " + module + " is both a target and in modules_to_save");
    lora[static_cast<size_t>(t.index)] = true;
    ++plan.adapted_linears;
  }
  if (plan.adapted_linears == 0) {
    return invalid_argument("lora: target_modules (" + config.describe() +
                            ") match no Linear module of this model; its Linear modules are " +
                            join(linears) + " (or all-linear)");
  }
  for (const std::string& k : config.modules_to_save) {
    LoraConfig one;
    one.modules_to_save = {k};
    bool found = false;
    for (const std::string& m : saved_hits) found = found || one.saves(m);
    if (!found) return invalid_argument("lora: modules_to_save '" + k + "' names no module");
  }

  ParamLayoutBuilder b;
  int next = 0;
  for (const GroupInfo& g : base.groups()) {
    b.begin_group(g.name);
    int64_t fp32_bytes = 0;  // the block's fp32 part, then its 4-bit weights
    std::vector<int> four_bit;
    for (int i = g.first_tensor; i < g.first_tensor + g.tensor_count; ++i) {
      const TensorInfo& t = tensors[static_cast<size_t>(i)];
      AdaptedTensor& a = plan.of_base[static_cast<size_t>(i)];
      if (saved[static_cast<size_t>(i)]) {
        b.add({.name = t.name, .kind = t.kind, .shape = t.shape, .hf_shape = t.hf_shape,
               .hf_transposed = t.hf_transposed});
        a.trainable = next++;
        plan.base_of.push_back(i);
        continue;
      }
      plan.frozen_params += t.numel;
      if (quant4 && held_4bit_when_frozen(t)) {
        a.quant4 = static_cast<int>(plan.quantized.size());
        plan.quantized.push_back(i);
        plan.quantized_params += t.numel;
        four_bit.push_back(i);
      } else {
        a.frozen = fp32_bytes;
        fp32_bytes += align_to_param(t.numel) * static_cast<int64_t>(sizeof(float));
      }
      if (!lora[static_cast<size_t>(i)]) continue;
      const std::string m = hf_module_name(t, "");
      const int64_t out = t.shape[0], in = t.shape[1];
      b.add({.name = m + ".lora_A.weight", .kind = ParamKind::kLoraA, .shape = {config.r, in}});
      b.add({.name = m + ".lora_B.weight", .kind = ParamKind::kLoraB, .shape = {out, config.r}});
      a.lora_a = next++;
      a.lora_b = next++;
      plan.base_of.push_back(i);
      plan.base_of.push_back(i);
    }
    int64_t at = fp32_bytes;
    for (int i : four_bit) {
      plan.of_base[static_cast<size_t>(i)].frozen = at;
      const auto bytes = static_cast<int64_t>(
          device::quant4_store_layout(tensors[static_cast<size_t>(i)].numel, *quant4).bytes);
      at += (bytes + 15) / 16 * 16;
    }
    plan.frozen_group_bytes.push_back(at);
  }
  plan.trainable = std::move(b).build();
  return plan;
}

}  // namespace zerotrain::model
