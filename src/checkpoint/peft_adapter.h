// A LoRA model's trainable tensors in Hugging Face PEFT's adapter format:
// DIR/adapter_config.json (model/lora_config.h's to_peft_json) and
// DIR/adapter_model.safetensors, tensors named as PEFT's save_pretrained
// names them: "base_model.model.<HF module>.lora_A.weight" [r, in],
// ".lora_B.weight" [out, r], and a modules_to_save copy as
// "base_model.model.<HF module>.weight" in HF's shape. So a PEFT user's
// PeftModel.from_pretrained(base, DIR) loads what zerotrain trained, and
// `train --init-adapter DIR` / `eval --adapter DIR` load what PEFT wrote.
//
//   ZT_RETURN_IF_ERROR(write_peft_adapter("out/adapter", model, read_trainable));
//   ZT_ASSIGN_OR_RETURN(LoraConfig c, read_peft_config("out/adapter"));
//   ZT_ASSIGN_OR_RETURN(PeftAdapter a, PeftAdapter::open("out/adapter", model.layout(), prefix));
//   a.read(offset, count, out);   // a reader over the trainable layout
//
// Thread-safety: none needed; files are written atomically.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "model/lora_config.h"
#include "model/module.h"
#include "model/param_layout.h"
#include "checkpoint/model_source.h"

namespace zerotrain::checkpoint {

inline constexpr const char* kPeftConfigFile = "adapter_config.json";
inline constexpr const char* kPeftWeightsFile = "adapter_model.safetensors";

// PEFT's tensor name of trainable tensor t (hf_prefix: the family's,
// Module::hf_module_prefix()).
std::string peft_tensor_name(const model::TensorInfo& t, const std::string& hf_prefix);

// Writes both files (fp32) into dir (created if missing), each atomically.
// `read` reads the trainable layout `trainable` (a checkpoint's master
// weights, a live module's parameters). fan_in_fan_out: the base is
// GPT-2's Conv1D (PEFT's flag for it; the tensors are the same).
Status write_peft_adapter(const std::string& dir, const model::LoraConfig& config,
                          const model::ParamLayout& trainable, const std::string& hf_prefix,
                          bool fan_in_fan_out, const model::ReadFlatFn& read);

// DIR/adapter_config.json; InvalidArgument naming the path and the key.
StatusOr<model::LoraConfig> read_peft_config(const std::string& dir);

// The adapter's tensors, checked against a module made with its config:
// every trainable tensor present with its shape, nothing else (a tensor
// for a module the config does not adapt is refused by name).
class PeftAdapter {
 public:
  static StatusOr<PeftAdapter> open(const std::string& dir, const model::ParamLayout& trainable,
                                    const std::string& hf_prefix);
  // Trainable flat elements [offset, offset + count) into out (gaps zero).
  Status read(int64_t offset, int64_t count, float* out) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<float> flat_;  // the whole trainable layout: adapters are small
};

// The merged weights W + s·B·A of every adapted Linear (and the copies of
// modules_to_save) as a reader over the module's base layout: what `eval
// --adapter`, `generate --adapter` and `checkpoint export --merge` load
// into a plain model. `base` reads base_layout; `adapter` plan's trainable
// layout.
model::ReadFlatFn merged_reader(const model::ParamLayout& base_layout,
                                std::shared_ptr<const model::AdapterPlan> plan,
                                model::ReadFlatFn base, model::ReadFlatFn adapter);

// `src` (a base model: HF dir, checkpoint) with the PEFT adapter in `dir`
// merged into its weights: src.read becomes the merged reader. The
// adapter's config and tensors are checked against src's model.
Status apply_peft_adapter(ModelSource& src, const std::string& dir);

}  // namespace zerotrain::checkpoint
