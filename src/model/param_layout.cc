// ParamLayout: the builder (64-byte aligned offsets, groups), name lookup
// and the HF layout conversions.
#include "model/param_layout.h"

#include <algorithm>

namespace zerotrain::model {

void ParamLayoutBuilder::begin_group(std::string name) {
  if (open_) close_group();
  GroupInfo g;
  g.index = static_cast<int>(layout_.groups_.size());
  g.name = std::move(name);
  g.offset = layout_.total_numel_;
  g.first_tensor = static_cast<int>(layout_.tensors_.size());
  layout_.groups_.push_back(std::move(g));
  open_ = true;
}

void ParamLayoutBuilder::add(TensorSpec spec) {
  ZT_CHECK(open_, "ParamLayoutBuilder::add(", spec.name, ") outside a group");
  TensorInfo t;
  t.name = std::move(spec.name);
  t.kind = spec.kind;
  t.numel = 1;
  for (int64_t d : spec.shape) t.numel *= d;
  t.hf_transposed = spec.hf_transposed;
  if (!spec.hf_shape.empty())
    t.hf_shape = std::move(spec.hf_shape);
  else if (t.hf_transposed)
    t.hf_shape = {spec.shape[1], spec.shape[0]};
  else
    t.hf_shape = spec.shape;
  ZT_CHECK(!t.hf_transposed || spec.shape.size() == 2, "hf_transposed needs a matrix: ", t.name);
  t.shape = std::move(spec.shape);
  t.offset = layout_.total_numel_;
  t.group = layout_.groups_.back().index;
  t.index = static_cast<int>(layout_.tensors_.size());
  layout_.total_numel_ = align_to_param(layout_.total_numel_ + t.numel);
  layout_.tensors_.push_back(std::move(t));
}

void ParamLayoutBuilder::close_group() {
  GroupInfo& g = layout_.groups_.back();
  g.numel = layout_.total_numel_ - g.offset;
  g.tensor_count = static_cast<int>(layout_.tensors_.size()) - g.first_tensor;
  open_ = false;
}

ParamLayout ParamLayoutBuilder::build() && {
  if (open_) close_group();
  return std::move(layout_);
}

StatusOr<int> ParamLayout::find(std::string_view name) const {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (tensors_[i].name == name) return static_cast<int>(i);
  }
  std::string examples;
  for (size_t i : {size_t{0}, tensors_.size() / 2, tensors_.size() - 1}) {
    if (i >= tensors_.size()) continue;
    if (!examples.empty()) examples += ", ";
    examples += "'" + tensors_[i].name + "'";
  }
  return not_found("no parameter named '" + std::string(name) + "' (names look like " + examples +
                   ")");
}

const TensorInfo& ParamLayout::tensor(std::string_view name) const {
  StatusOr<int> i = find(name);
  ZT_CHECK(i.ok(), i.status().to_string());
  return tensors_[*i];
}

const TensorInfo& ParamLayout::group_tensor(int g, int slot) const {
  const GroupInfo& gi = groups_[static_cast<size_t>(g)];
  ZT_CHECK(slot >= 0 && slot < gi.tensor_count, "group ", gi.name, " slot ", slot, " out of range");
  return tensors_[gi.first_tensor + slot];
}

int64_t hf_numel(const TensorInfo& t) {
  int64_t n = 1;
  for (int64_t d : t.hf_shape) n *= d;
  return n;
}

void copy_to_hf(const TensorInfo& t, const float* ours, float* hf) {
  if (!t.hf_transposed) {  // same row-major order; a padded embedding drops its padding rows
    std::copy(ours, ours + hf_numel(t), hf);
    return;
  }
  const int64_t rows = t.shape[0], cols = t.shape[1];  // ours [out, in]
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) hf[c * rows + r] = ours[r * cols + c];
  }
}

void copy_from_hf(const TensorInfo& t, const float* hf, float* ours) {
  if (!t.hf_transposed) {
    const int64_t n = hf_numel(t);
    std::copy(hf, hf + n, ours);
    std::fill(ours + n, ours + t.numel, 0.0f);
    return;
  }
  const int64_t rows = t.shape[0], cols = t.shape[1];
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) ours[r * cols + c] = hf[c * rows + r];
  }
}

}  // namespace zerotrain::model
