// ParamLayout construction: HF GPT-2 names, shapes and 64-byte aligned
// offsets, grouped embeddings / blocks / final layernorm.
#include "model/param_layout.h"

#include <algorithm>

namespace zerotrain::model {
namespace {

int64_t align_up(int64_t n) {
  return (n + kParamAlignment - 1) / kParamAlignment * kParamAlignment;
}

class Builder {
 public:
  explicit Builder(std::vector<TensorInfo>* out) : out_(out) {}

  void add(std::string name, ParamKind kind, std::vector<int64_t> shape, int group) {
    TensorInfo t;
    t.name = std::move(name);
    t.kind = kind;
    t.numel = 1;
    for (int64_t d : shape) t.numel *= d;
    // Linear weights: ours [out, in], HF Conv1D [in, out].
    t.hf_transposed = kind == ParamKind::kLinearWeight || kind == ParamKind::kResidualProjWeight;
    t.hf_shape = t.hf_transposed ? std::vector<int64_t>{shape[1], shape[0]} : shape;
    t.shape = std::move(shape);
    t.offset = next_;
    t.group = group;
    next_ = align_up(next_ + t.numel);
    out_->push_back(std::move(t));
  }
  int64_t next() const { return next_; }

 private:
  std::vector<TensorInfo>* out_;
  int64_t next_ = 0;
};

}  // namespace

ParamLayout::ParamLayout(const GptConfig& cfg) {
  const Status valid = validate(cfg);
  ZT_CHECK(valid.ok(), valid.to_string());
  const int64_t C = cfg.n_embd;
  Builder b(&tensors_);
  auto open_group = [&](std::string name) {
    GroupInfo g;
    g.index = static_cast<int>(groups_.size());
    g.name = std::move(name);
    g.offset = b.next();
    g.first_tensor = static_cast<int>(tensors_.size());
    groups_.push_back(std::move(g));
  };
  auto close_group = [&] {
    GroupInfo& g = groups_.back();
    g.numel = b.next() - g.offset;
    g.tensor_count = static_cast<int>(tensors_.size()) - g.first_tensor;
  };

  open_group("embeddings");
  b.add("wte.weight", ParamKind::kTokenEmbedding, {cfg.padded_vocab, C}, 0);
  tensors_.back().hf_shape[0] = cfg.vocab_size;
  b.add("wpe.weight", ParamKind::kPositionEmbedding, {cfg.seq_len, C}, 0);
  close_group();
  for (int64_t l = 0; l < cfg.n_layer; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    const int g = static_cast<int>(l) + 1;
    open_group("h." + std::to_string(l));
    b.add(h + "ln_1.weight", ParamKind::kLayerNormWeight, {C}, g);
    b.add(h + "ln_1.bias", ParamKind::kLayerNormBias, {C}, g);
    b.add(h + "attn.c_attn.weight", ParamKind::kLinearWeight, {3 * C, C}, g);
    b.add(h + "attn.c_attn.bias", ParamKind::kLinearBias, {3 * C}, g);
    b.add(h + "attn.c_proj.weight", ParamKind::kResidualProjWeight, {C, C}, g);
    b.add(h + "attn.c_proj.bias", ParamKind::kLinearBias, {C}, g);
    b.add(h + "ln_2.weight", ParamKind::kLayerNormWeight, {C}, g);
    b.add(h + "ln_2.bias", ParamKind::kLayerNormBias, {C}, g);
    b.add(h + "mlp.c_fc.weight", ParamKind::kLinearWeight, {4 * C, C}, g);
    b.add(h + "mlp.c_fc.bias", ParamKind::kLinearBias, {4 * C}, g);
    b.add(h + "mlp.c_proj.weight", ParamKind::kResidualProjWeight, {C, 4 * C}, g);
    b.add(h + "mlp.c_proj.bias", ParamKind::kLinearBias, {C}, g);
    close_group();
  }
  const int last = static_cast<int>(cfg.n_layer) + 1;
  open_group("ln_f");
  b.add("ln_f.weight", ParamKind::kLayerNormWeight, {C}, last);
  b.add("ln_f.bias", ParamKind::kLayerNormBias, {C}, last);
  close_group();
  total_numel_ = b.next();
}

StatusOr<int> ParamLayout::find(std::string_view name) const {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (tensors_[i].name == name) return static_cast<int>(i);
  }
  return not_found("no parameter named '" + std::string(name) + "' (names look like " +
                   "'wte.weight', 'h.0.attn.c_attn.weight', 'ln_f.bias')");
}

const TensorInfo& ParamLayout::tensor(std::string_view name) const {
  StatusOr<int> i = find(name);
  ZT_CHECK(i.ok(), i.status().to_string());
  return tensors_[*i];
}

const TensorInfo& ParamLayout::block_tensor(int64_t layer, int slot) const {
  const GroupInfo& g = groups_[static_cast<size_t>(layer) + 1];
  ZT_CHECK(slot >= 0 && slot < g.tensor_count, "block slot ", slot, " out of range");
  return tensors_[g.first_tensor + slot];
}

int64_t hf_numel(const TensorInfo& t) {
  int64_t n = 1;
  for (int64_t d : t.hf_shape) n *= d;
  return n;
}

void copy_to_hf(const TensorInfo& t, const float* ours, float* hf) {
  if (!t.hf_transposed) {  // same row-major order; wte drops its padding rows
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
