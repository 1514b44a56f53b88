// GPT-2's parameter layout: HF GPT2Model's names (without "transformer."),
// shapes and order, grouped 0 = embeddings (wte, wpe), 1..L = block i-1,
// L+1 = final layernorm. The lm head is tied: it reads wte from group 0
// and adds its gradient into group 0's wte gradient (see gpt_model.h).
// HF's Conv1D stores weights [in, out]; ours are [out, in] (hf_transposed).
// wte has Vp rows here and V in HF (hf_shape[0] = V).
//
//   ParamLayout l = make_layout(cfg);
//   const TensorInfo& w = block_tensor(l, 3, kAttnWeight);   // h.3.attn.c_attn.weight
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "model/gpt2/config.h"
#include "model/param_layout.h"

namespace zerotrain::model::gpt2 {

// cfg must pass validate() (checked).
ParamLayout make_layout(const GptConfig& cfg);

// Slot of each tensor inside a block group, in HF order.
enum BlockSlot : int {
  kLn1Weight = 0,
  kLn1Bias,
  kAttnWeight,      // c_attn.weight [3C, C]
  kAttnBias,        // [3C]
  kAttnProjWeight,  // attn.c_proj.weight [C, C]
  kAttnProjBias,
  kLn2Weight,
  kLn2Bias,
  kFcWeight,      // mlp.c_fc.weight [4C, C]
  kFcBias,        // [4C]
  kFcProjWeight,  // mlp.c_proj.weight [C, 4C]
  kFcProjBias,
  kBlockSlots,
};

// Fixed positions, for the model's hot path (no name lookup).
inline const TensorInfo& wte(const ParamLayout& l) { return l.tensors().front(); }
inline const TensorInfo& wpe(const ParamLayout& l) { return l.tensors()[1]; }
inline const TensorInfo& lnf_weight(const ParamLayout& l) {
  return l.tensors()[l.tensors().size() - 2];
}
inline const TensorInfo& lnf_bias(const ParamLayout& l) { return l.tensors().back(); }
inline const TensorInfo& block_tensor(const ParamLayout& l, int64_t layer, int slot) {
  return l.group_tensor(static_cast<int>(layer) + 1, slot);
}

}  // namespace zerotrain::model::gpt2
