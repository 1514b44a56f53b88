// Where a training run's initial weights come from, as a reader by flat
// range (zero::InitialWeights): the model's seeded init, or a safetensors
// file / Hugging Face model directory (`--init`, `--model DIR`). The engine
// reads through it: at ZeRO stage 3 each rank only its own partition (no
// rank ever holds the whole model), below stage 3 the whole buffer.
//
//   ZT_ASSIGN_OR_RETURN(InitialWeights w, initial_weights(path, *model, seed));
//   engine_options.initial_weights = w.read;
//   ... log w.description, w.floats_read->load() after the engine exists
//
// Thread-safety: the reader may be called from one thread at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "model/module.h"
#include "zero/options.h"

namespace zerotrain::train {

struct InitialWeights {
  zero::InitialWeights read;  // over model.layout() (the trainable one with LoRA)
  // With LoRA: the base weights over model.base_layout(), for load_frozen.
  model::ReadFlatFn base;
  std::string description;  // "seeded init (seed 1234)", "HF model directory DIR"
  std::shared_ptr<std::atomic<int64_t>> floats_read;  // through `read` so far
};

// path empty: the model's init_range(seed, ...). Otherwise the file or
// directory's names and shapes are checked now against the model's layout
// (so a bad file fails on every rank before any collective), and `read`
// reads only the bytes of the range asked for. `model` must outlive it.
// With adapters (model.adapters()): the base comes from path (or the seed)
// and the trainable tensors from the PEFT adapter directory `adapter_dir`
// (`--init-adapter`), or else PEFT's init (lora_B zero, so the first
// forward is the base's) with modules_to_save copied from the base.
StatusOr<InitialWeights> initial_weights(const std::string& path, const model::Module& model,
                                         uint64_t seed, const std::string& adapter_dir = "");
// The base alone (read == base), over base_layout().
StatusOr<InitialWeights> initial_weights(const std::string& path, const model::Module& model,
                                         uint64_t seed, std::nullptr_t);

// "[zerotrain] initial weights: <description>; read by this rank 12.0 MiB
// (model 48.0 MiB); peak RSS 80.1 MiB\n" (numel: the flat buffer's
// elements). At stage 3 a rank reads its partition and, whole, the small
// tensors every rank keeps (stage3_param_persistence_threshold).
std::string format_initial_weights_line(const InitialWeights& w, int64_t numel);

}  // namespace zerotrain::train
