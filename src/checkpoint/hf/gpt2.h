// GPT-2 weights as a Hugging Face safetensors file (model.safetensors of
// GPT2Model / GPT2LMHeadModel): export from and import into our flat
// ParamLayout buffer. HF names without the "transformer." prefix, Conv1D
// weights transposed to HF's [in, out], wte with the real V rows; the lm
// head is tied to wte, so no lm_head.weight is written.
//
//   ZT_RETURN_IF_ERROR(write_hf_gpt2(dir + "/model.safetensors", layout,
//       DType::kBFloat16, [&](int64_t offset, int64_t count, float* out) {
//         std::copy_n(params + offset, count, out);
//         return ok_status();
//       }));
//   ZT_RETURN_IF_ERROR(load_hf_gpt2(path, layout, params));
//
// Thread-safety: free functions; read_flat is called from the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "model/param_layout.h"

namespace zerotrain::checkpoint {

using model::ReadFlatFn;

// Writes `tensors` (of one layout) in this order to one safetensors file
// under their names, in `dtype`, as write_hf_gpt2 does.
Status write_hf_tensors(const std::string& path,
                        const std::vector<const model::TensorInfo*>& tensors, DType dtype,
                        const ReadFlatFn& read_flat,
                        const std::map<std::string, std::string>& metadata = {});
// Writes every tensor of `layout`, in layout order, in `dtype` (rounded to
// nearest even), reading each one's range [t.offset, t.offset + t.numel)
// through read_flat just before writing it, so at most one tensor is held
// in memory. metadata gets "format": "pt" unless it sets "format" (HF's
// from_pretrained checks it). Atomic: on any error nothing appears at path.
Status write_hf_gpt2(const std::string& path, const model::ParamLayout& layout, DType dtype,
                     const ReadFlatFn& read_flat,
                     const std::map<std::string, std::string>& metadata = {});

// Reads an HF GPT-2 safetensors file into `params` (layout.total_numel()
// floats), converting F16/BF16 to fp32 and Conv1D weights to our layout;
// wte's padding rows and the alignment gaps are zero. Names may carry the
// "transformer." prefix. lm_head.weight (tied) and HF's attention mask
// buffers (names ending in ".attn.bias" / ".attn.masked_bias" that are not
// parameters) are ignored. InvalidArgument naming the tensor for a missing
// parameter, a shape other than its hf_shape (so a file for another model
// size is refused), a name given twice, or any other unknown name. On
// error `params` may be partly written.
Status load_hf_gpt2(const std::string& path, const model::ParamLayout& layout, float* params);

}  // namespace zerotrain::checkpoint
