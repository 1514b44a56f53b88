// ParamLayout: every parameter tensor of a model as a named slice of one
// contiguous flat fp32 buffer, grouped per layer so ZeRO can gather,
// release and reduce one group at a time. Gradients use the same layout.
// Any family builds its own with ParamLayoutBuilder (model/gpt2/layout.cc);
// zero/, engine/ and checkpoint/ only read it.
//
// Every tensor offset (and so every group offset) is a multiple of
// kParamAlignment elements (64 bytes), and a group's span [offset,
// offset + numel) holds its tensors and the alignment gaps between them
// (gaps stay zero).
//
// Names and shapes follow the family's Hugging Face state dict (GPT-2:
// GPT2Model's, without "transformer."; Llama: LlamaForCausalLM's in
// full). A tensor HF stores transposed (GPT-2's Conv1D: [in, out]; ours is
// the kernels' [out, in]) has hf_transposed and hf_shape reversed; an embedding padded past the vocabulary has more rows
// here than in HF (hf_shape[0] = V): an export keeps the first V rows.
//
//   ParamLayoutBuilder b;
//   b.begin_group("embeddings");
//   b.add({.name = "wte.weight", .kind = ParamKind::kTokenEmbedding, .shape = {Vp, C},
//          .hf_shape = {V, C}});
//   ParamLayout layout = std::move(b).build();
//   const TensorInfo& t = layout.tensor("wte.weight");
//   for (const GroupInfo& g : layout.groups()) gather(g.offset, g.numel);
//
// Thread-safety: immutable after construction; share freely.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace zerotrain::model {

inline constexpr int64_t kParamAlignment = 16;  // floats = 64 bytes

// n rounded up to a multiple of kParamAlignment.
inline constexpr int64_t align_to_param(int64_t n) {
  return (n + kParamAlignment - 1) / kParamAlignment * kParamAlignment;
}

// What a tensor is, for initialisation and the HF mapping.
enum class ParamKind {
  kTokenEmbedding,      // [Vp, C]
  kPositionEmbedding,   // [maxT, C]
  kLayerNormWeight,     // [C] (also RMSNorm's weight)
  kLayerNormBias,       // [C]
  kLinearWeight,        // [OC, C]
  kResidualProjWeight,  // [C, IC]: projections into the residual stream (scaled init)
  kLinearBias,          // [OC]
  kLoraA,               // [r, in]: a LoRA adapter's down projection (model/adapters.h)
  kLoraB,               // [out, r]: its up projection (initialised to zero)
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
  int index = 0;  // in tensors()
};

struct GroupInfo {
  int index = 0;
  std::string name;      // "embeddings", "h.0" ... "h.{L-1}", "ln_f"
  int64_t offset = 0;    // elements, multiple of kParamAlignment
  int64_t numel = 0;     // span incl. alignment gaps, multiple of kParamAlignment
  int first_tensor = 0;  // tensors()[first_tensor, first_tensor + tensor_count)
  int tensor_count = 0;
};

// One tensor for ParamLayoutBuilder::add: hf_shape empty means the same as
// shape (or its reverse when hf_transposed).
struct TensorSpec {
  std::string name;
  ParamKind kind = ParamKind::kLinearWeight;
  std::vector<int64_t> shape{};
  std::vector<int64_t> hf_shape{};
  bool hf_transposed = false;
};

class ParamLayout {
 public:
  ParamLayout() = default;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::vector<GroupInfo>& groups() const { return groups_; }
  int num_groups() const { return static_cast<int>(groups_.size()); }
  // Floats in the flat buffer (all groups, with gaps).
  int64_t total_numel() const { return total_numel_; }
  int64_t total_bytes() const { return total_numel_ * static_cast<int64_t>(sizeof(float)); }

  // Index into tensors() of an HF name, or NotFound naming it and an example.
  StatusOr<int> find(std::string_view name) const;
  // The tensor named `name`; aborts if there is none (for fixed names).
  const TensorInfo& tensor(std::string_view name) const;
  // Group g's tensor in `slot` (its index within the group).
  const TensorInfo& group_tensor(int g, int slot) const;

 private:
  friend class ParamLayoutBuilder;
  std::vector<TensorInfo> tensors_;
  std::vector<GroupInfo> groups_;
  int64_t total_numel_ = 0;
};

// Builds a ParamLayout group by group, tensor by tensor, in flat order.
class ParamLayoutBuilder {
 public:
  void begin_group(std::string name);
  // Into the open group (checked: a group must be open).
  void add(TensorSpec spec);
  ParamLayout build() &&;

 private:
  void close_group();
  ParamLayout layout_;
  bool open_ = false;
};

// A source of parameter values by flat range: fills out[0, count) (host
// memory) with the flat parameters [offset, offset + count) of a layout.
// What an export reads a checkpoint through, and what the initial weights
// (a seeded init, an HF checkpoint) are read through.
using ReadFlatFn = std::function<Status(int64_t offset, int64_t count, float* out)>;

// HF conversion of one tensor: `ours` holds t.numel floats in our layout,
// `hf` the product of t.hf_shape floats in HF's. to_hf transposes
// hf_transposed weights and keeps a padded embedding's first rows;
// from_hf is the inverse and zeroes the padding rows.
void copy_to_hf(const TensorInfo& t, const float* ours, float* hf);
void copy_from_hf(const TensorInfo& t, const float* hf, float* ours);
int64_t hf_numel(const TensorInfo& t);

}  // namespace zerotrain::model
