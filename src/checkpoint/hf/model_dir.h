// A Hugging Face model directory, read and written by parameter name for
// any family whose ParamLayout names its tensors as HF's state dict does
// (model/llama/: LlamaForCausalLM's names; model/gpt2/: GPT2Model's, a
// "transformer." prefix accepted on import).
//
//   DIR/config.json                          the family's config (model_type)
//   DIR/model.safetensors                    one file, or
//   DIR/model-00001-of-00003.safetensors     shards, with
//   DIR/model.safetensors.index.json         {"metadata": {"total_size"},
//                                            "weight_map": {name: file}}
//
//   ZT_ASSIGN_OR_RETURN(HfModelDir d, open_hf_model("path/to/Llama-3.2-1B"));
//   ZT_ASSIGN_OR_RETURN(ModelSpec spec, model::model_spec_from_config(d.config));
//   ZT_ASSIGN_OR_RETURN(HfWeights w, HfWeights::open(d, layout));
//   ZT_RETURN_IF_ERROR(w.read(shard_begin, shard_end, shard));          // rank-sharded
//   ZT_RETURN_IF_ERROR(write_hf_model(out_dir, config, layout, DType::kBFloat16, read_flat));
//
// Import reads only the tensors, and within a tensor only the elements,
// that overlap the requested flat range (transposed GPT-2 weights whole),
// so a ZeRO-3 rank reads about its own shard's bytes. Tensors the file may
// carry that are not parameters are skipped: an lm_head.weight when the
// layout ties it, GPT-2's attention mask buffers, rotary inv_freq
// buffers. Anything else unknown, a missing tensor, a shape other than HF's
// or a name twice is refused naming the file and the tensor.
//
// Thread-safety: free functions; no shared state.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checkpoint/hf/gpt2.h"
#include "checkpoint/safetensors.h"
#include "core/dtype.h"
#include "core/status.h"
#include "model/param_layout.h"
#include "model/registry.h"

namespace zerotrain::checkpoint {

struct HfModelDir {
  std::string path;                       // the directory (or the bare config's file)
  nlohmann::json config;                  // config.json
  std::vector<std::string> weight_files;  // full paths; empty for a bare config.json
};

// path: a directory with config.json and weights (single or sharded), a
// directory with config.json alone, or a config.json file. NotFound naming
// what is missing; Corruption naming the file for unreadable JSON, an index
// naming a shard that is not there, or both a single file and an index.
StatusOr<HfModelDir> open_hf_model(const std::string& path);

// A directory's weights matched to `layout` once — its files opened, every
// tensor found and checked as described above (InvalidArgument; also when
// the directory has no weights) — then read by flat range as often as
// needed (a ZeRO-3 rank's pieces) without opening anything again.
// `layout` must outlive it; move-only.
class HfWeights {
 public:
  static StatusOr<HfWeights> open(const HfModelDir& dir, const model::ParamLayout& layout);
  // Fills out[0, end - begin) with the flat parameters [begin, end)
  // (converted to fp32; padding rows and alignment gaps zero).
  Status read(int64_t begin, int64_t end, float* out) const;

 private:
  struct Located {
    size_t file = 0;                            // index into files_
    const SafetensorsTensor* tensor = nullptr;  // in files_[file]
  };
  HfWeights() = default;
  Status locate();
  Status read_overlap(const Located& w, const model::TensorInfo& info, int64_t begin, int64_t end,
                      float* out) const;

  const model::ParamLayout* layout_ = nullptr;
  std::vector<SafetensorsFile> files_;
  std::vector<Located> where_;  // [layout tensors]
};

// HfWeights::open, then one read.
Status load_hf_range(const HfModelDir& dir, const model::ParamLayout& layout, int64_t begin,
                     int64_t end, float* out);

// A safetensors file as a one-file HfModelDir (no config), or an HF model
// directory (open_hf_model).
StatusOr<HfModelDir> open_hf_weights(const std::string& path);

// `--model` as every command takes it: a preset name, or a path (it has a
// '/', ends in .json or exists) to an HF model directory or a config.json.
// weights: the directory when it holds weights, else empty. Errors say
// which the argument was taken for.
struct ResolvedModel {
  model::ModelSpec spec;
  std::string weights;
};
StatusOr<ResolvedModel> resolve_model(const std::string& preset_or_path);

// The whole layout into out (layout.total_numel() floats) from `path`: a
// safetensors file, or an HF model directory's weights.
Status load_hf_weights(const std::string& path, const model::ParamLayout& layout, float* out);

// Writes config.json (atomically) and the weights in `dtype`: one
// model.safetensors, or, when they exceed max_shard_bytes (0: never),
// model-0000i-of-0000N.safetensors and model.safetensors.index.json, each
// tensor read through read_flat just before it is written. Creates dir.
// Stale weight files of another layout in dir are removed first.
Status write_hf_model(const std::string& dir, const nlohmann::json& config,
                      const model::ParamLayout& layout, DType dtype, const ReadFlatFn& read_flat,
                      int64_t max_shard_bytes = 0,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace zerotrain::checkpoint
