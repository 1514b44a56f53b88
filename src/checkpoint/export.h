// export_safetensors: a checkpoint's fp32 master weights as one safetensors
// file under Hugging Face GPT-2 names (DeepSpeed's zero_to_fp32.py, as
// `zerotrain checkpoint export`), streamed tensor by tensor from whichever
// shards hold each one: memory is one tensor, never the whole checkpoint,
// and the result is the same whatever world size and stage wrote it.
//
//   ZT_RETURN_IF_ERROR(export_safetensors("ckpt/global_step30", "model.safetensors",
//                                         DType::kBFloat16));
//
// Thread-safety: none needed; reads files, writes one atomically.
#pragma once

#include <string>

#include "core/dtype.h"
#include "core/status.h"

namespace zerotrain::checkpoint {

Status export_safetensors(const std::string& tag_dir, const std::string& out_path, DType dtype);

}  // namespace zerotrain::checkpoint
