// ParamLayout: every parameter tensor of a GptConfig as a named slice of one
// contiguous flat fp32 buffer, grouped per layer so ZeRO can gather, release
// and reduce one group at a time. Gradients use the same layout.
//
// Groups: 0 = embeddings (wte, wpe), 1..L = transformer block i-1,
// L+1 = final layernorm. The lm head is tied: it reads wte from group 0 and
// adds its gradient into group 0's wte gradient (see gpt_model.h).
// Within a group tensors follow HF GPT-2's order; every tensor offset (and
// so every group offset) is a multiple of kParamAlignment elements (64
// bytes), and a group's span [offset, offset + numel) holds its tensors and
// the alignment gaps between them (gaps stay zero).
//
// Names and shapes follow HF's GPT2Model state dict without the "transformer."
// prefix. HF's Conv1D stores weights [in, out]; ours are [out, in] (the
// kernels' linear layout), so those tensors have hf_transposed = true and
// hf_shape reversed. wte has Vp rows here and V in HF (hf_shape[0] = V): an
// export keeps the first V rows.
//
//   ParamLayout layout(cfg);
//   const TensorInfo& t = layout.tensor("h.0.attn.c_attn.weight");
//   float* w = params + t.offset;                 // [3C, C]
//   for (const GroupInfo& g : layout.groups()) gather(g.offset, g.numel);
//
// Thread-safety: immutable after construction; share freely.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/gpt_config.h"

namespace zerotrain::model {

inline constexpr int64_t kParamAlignment = 16;  // floats = 64 bytes

// What a tensor is, for initialisation and for the model's wiring.
enum class ParamKind {
  kTokenEmbedding,      // wte [Vp, C]
  kPositionEmbedding,   // wpe [maxT, C]
  kLayerNormWeight,     // [C]
  kLayerNormBias,       // [C]
  kLinearWeight,        // [OC, C]
  kResidualProjWeight,  // [C, IC]: attn.c_proj and mlp.c_proj (scaled init)
  kLinearBias,          // [OC]
};

struct TensorInfo {
  std::string name;  // HF name, e.g. "h.3.mlp.c_fc.weight"
  ParamKind kind;
  std::vector<int64_t> shape;     // ours, row-major
  std::vector<int64_t> hf_shape;  // as HF stores it
  bool hf_transposed = false;     // HF stores the transpose of ours (Conv1D)
  int64_t offset = 0;             // elements from the start of the flat buffer
  int64_t numel = 0;              // product of shape
  int group = 0;
};

struct GroupInfo {
  int index = 0;
  std::string name;      // "embeddings", "h.0" ... "h.{L-1}", "ln_f"
  int64_t offset = 0;    // elements, multiple of kParamAlignment
  int64_t numel = 0;     // span incl. alignment gaps, multiple of kParamAlignment
  int first_tensor = 0;  // tensors()[first_tensor, first_tensor + tensor_count)
  int tensor_count = 0;
};

class ParamLayout {
 public:
  // cfg must pass validate() (checked).
  explicit ParamLayout(const GptConfig& cfg);

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::vector<GroupInfo>& groups() const { return groups_; }
  int num_groups() const { return static_cast<int>(groups_.size()); }  // L + 2
  // Floats in the flat buffer (all groups, with gaps).
  int64_t total_numel() const { return total_numel_; }
  int64_t total_bytes() const { return total_numel_ * static_cast<int64_t>(sizeof(float)); }

  // Index into tensors() of an HF name, or NotFound naming it.
  StatusOr<int> find(std::string_view name) const;
  // The tensor named `name`; aborts if there is none (for fixed names).
  const TensorInfo& tensor(std::string_view name) const;
  // Fixed positions, for the model's hot path (no name lookup):
  const TensorInfo& wte() const { return tensors_.front(); }
  const TensorInfo& wpe() const { return tensors_[1]; }
  const TensorInfo& lnf_weight() const { return tensors_[tensors_.size() - 2]; }
  const TensorInfo& lnf_bias() const { return tensors_.back(); }
  // Block `layer`'s tensor in `slot` (BlockSlot below).
  const TensorInfo& block_tensor(int64_t layer, int slot) const;

 private:
  std::vector<TensorInfo> tensors_;
  std::vector<GroupInfo> groups_;
  int64_t total_numel_ = 0;
};

// HF conversion of one tensor: `ours` holds t.numel floats in our layout,
// `hf` the product of t.hf_shape floats in HF's. to_hf transposes Conv1D
// weights and keeps wte's first V rows; from_hf is the inverse and zeroes
// wte's padding rows.
void copy_to_hf(const TensorInfo& t, const float* ours, float* hf);
void copy_from_hf(const TensorInfo& t, const float* hf, float* ours);
int64_t hf_numel(const TensorInfo& t);

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

}  // namespace zerotrain::model
