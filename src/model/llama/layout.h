// The Llama family's parameter layout: HF LlamaForCausalLM's state-dict
// names ("model.layers.3.self_attn.q_proj.weight", "lm_head.weight"), shapes,
// grouped 0 = embed_tokens, 1..L = layers.{l}, L+1 = the final norm and
// (untied) lm_head. Linear weights are [out, in] as nn.Linear stores them;
// the embedding and lm head have Vp rows here and V in HF.
//
//   ParamLayout l = make_layout(cfg);
//   BlockSlots s = block_slots(cfg);
//   const TensorInfo& wq = l.group_tensor(1 + layer, s.q_weight);
//
// Thread-safety: pure functions.
#pragma once

#include "model/llama/config.h"
#include "model/param_layout.h"

namespace zerotrain::model::llama {

// cfg must pass validate() (checked).
ParamLayout make_layout(const LlamaConfig& cfg);

// Slot of each tensor inside a layer group; -1 for an absent bias.
struct BlockSlots {
  int input_norm = 0, q_weight = 0, q_bias = -1, k_weight = 0, k_bias = -1, v_weight = 0,
      v_bias = -1, o_weight = 0, o_bias = -1, post_norm = 0, gate = 0, up = 0, down = 0;
};
BlockSlots block_slots(const LlamaConfig& cfg);

}  // namespace zerotrain::model::llama
