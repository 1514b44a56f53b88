// Inference helpers for `zerotrain generate` and `zerotrain eval`: a model
// loaded whole from any source open_model_source takes (fp32 parameters,
// no gradients), its tokenizer, and the held-out loss of token data.
//
//   ZT_ASSIGN_OR_RETURN(InferenceModel m, load_inference_model("ckpt", {.max_seq = 256}));
//   ZT_ASSIGN_OR_RETURN(EvalResult r, evaluate(*m.module, dataset, 256, 8));
//   // r.mean_loss, r.perplexity = exp(mean_loss)
//
// Thread-safety: one caller per model.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "checkpoint/model_source.h"
#include "core/status.h"
#include "device/quant4.h"
#include "model/module.h"
#include "train/data/dataset.h"

namespace zerotrain::train {

struct InferenceModel {
  std::unique_ptr<model::Module> module;
  model::ModelSpec spec;
  std::string description;  // where the weights came from
  std::string source_dir;   // the directory of the source (for a tokenizer beside it)
};

// InvalidArgument when the source has no weights (a preset or bare config).
// adapter: a PEFT adapter directory merged into the weights at load;
// base_4bit: first round the base's Linear weights to 4-bit (QLoRA's base,
// checkpoint/quantized_base.h).
StatusOr<InferenceModel> load_inference_model(
    const std::string& path, int64_t max_batch, int64_t max_seq, const std::string& adapter = "",
    const std::optional<device::Quant4Options>& base_4bit = {});
// The same from a source already opened from `path` (to size the model by
// its config first).
StatusOr<InferenceModel> load_inference_model(checkpoint::ModelSource src,
                                              const std::string& path, int64_t max_batch,
                                              int64_t max_seq);

struct EvalResult {
  double mean_loss = 0;   // over every trained target, each counted once
  double perplexity = 0;  // exp(mean_loss)
  uint64_t targets = 0;
  uint64_t windows = 0;
  double seconds = 0;
};

// The loss over the dataset's windows [w·T, w·T + T + 1), w = 0..W-1 in
// order (max_windows > 0: the first that many), `batch` windows a forward;
// targets the loss mask excludes are not counted.
StatusOr<EvalResult> evaluate(model::Module& m, const TokenDataset& data, int64_t seq_len,
                              int64_t batch, uint64_t max_windows = 0);

}  // namespace zerotrain::train
