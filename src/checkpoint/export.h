// export_safetensors: a checkpoint's fp32 master weights as one safetensors
// file under Hugging Face GPT-2 names (DeepSpeed's zero_to_fp32.py, as
// `zerotrain checkpoint export`), streamed tensor by tensor from whichever
// shards hold each one: memory is one tensor, never the whole checkpoint,
// and the result is the same whatever world size and stage wrote it.
//
//   ZT_RETURN_IF_ERROR(export_safetensors("ckpt/global_step30", "model.safetensors",
//                                         DType::kBFloat16));
//
// Thread-safety: none needed; reads files, writes each atomically.
#pragma once

#include <string>

#include "core/dtype.h"
#include "core/status.h"

namespace zerotrain::checkpoint {

Status export_safetensors(const std::string& tag_dir, const std::string& out_path, DType dtype);

// HF's default max_shard_size ("5GB").
inline constexpr int64_t kDefaultMaxShardBytes = 5'000'000'000;

// The same weights as a Hugging Face model directory (checkpoint/hf/
// model_dir.h): config.json (the model's config with "architectures" and
// "torch_dtype" added when absent) and the weights, one file or shards of
// at most max_shard_bytes with an index, so the directory loads where HF
// models load and as `zerotrain train --model OUT_DIR`.
Status export_hf_model(const std::string& tag_dir, const std::string& out_dir, DType dtype,
                       int64_t max_shard_bytes = kDefaultMaxShardBytes);

// A LoRA run's checkpoint (its manifest has an adapter) as a PEFT adapter
// directory (checkpoint/peft_adapter.h), and merged into its base (an HF
// model directory whose frozen weights must be the run's: their CRC-32 is
// checked against the manifest's) as an HF model directory.
Status export_peft_adapter(const std::string& tag_dir, const std::string& out_dir);
Status export_merged_model(const std::string& tag_dir, const std::string& base_path,
                           const std::string& out_dir, DType dtype,
                           int64_t max_shard_bytes = kDefaultMaxShardBytes);

}  // namespace zerotrain::checkpoint
