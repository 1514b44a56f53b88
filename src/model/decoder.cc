#include "model/decoder.h"

#include <algorithm>

#include "device/ops.h"
#include "model/module.h"

namespace zerotrain::model {

Decoder::Decoder(device::Device& device, int64_t B, int64_t Tmax, int64_t max_chunk, int64_t V,
                 int64_t Vp, DType dtype)
    : device_(device), B_(B), Tmax_(Tmax), max_chunk_(max_chunk), V_(V), Vp_(Vp), dtype_(dtype) {}

Status Decoder::bind_bf16_weights(const Module& m) {
  const auto& groups = m.layout().groups();
  bool viewed = true;
  size_t copy = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    viewed = viewed && m.group_parameters_bf16(static_cast<int>(g)) != nullptr;
    copy += static_cast<size_t>(groups[g].numel);
  }
  if (viewed) {  // a 16-bit compute copy already holds these values
    for (size_t g = 0; g < groups.size(); ++g)
      w16_base_.push_back(m.group_parameters_bf16(static_cast<int>(g)));
    return ok_status();
  }
  ZT_ASSIGN_OR_RETURN(w16_copy_,
                      device_.allocate(copy * sizeof(BFloat16), device::MemoryCategory::kParameters,
                                       "generation bf16 weights"));
  BFloat16* at = w16_copy_.as<BFloat16>();
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto n = static_cast<size_t>(groups[g].numel);
    ZT_RETURN_IF_ERROR(device_.ops().convert(
        ConstTensor(m.group_parameters(static_cast<int>(g)), DType::kFloat32, n, &device_),
        Tensor(at, DType::kBFloat16, n, &device_)));
    w16_base_.push_back(at);
    at += n;
  }
  return ok_status();
}

Status Decoder::allocate_io(const Module* m) {
  if (dtype_ != DType::kFloat32 && dtype_ != DType::kBFloat16)
    return invalid_argument("generate: dtype " + std::string(dtype_name(dtype_)) +
                            " is not supported (fp32 or bf16)");
  module_ = m;
  if (m != nullptr) {
    for (const auto& g : m->layout().groups()) group_offset_.push_back(g.offset);
  }
  if (dtype_ == DType::kBFloat16) {
    if (m == nullptr) return invalid_argument("generate: a bf16 decoder needs its model's weights");
    ZT_RETURN_IF_ERROR(bind_bf16_weights(*m));
  }
  ZT_ASSIGN_OR_RETURN(tokens_,
                      device_.allocate(static_cast<size_t>(B_ * max_chunk_) * 4,
                                       device::MemoryCategory::kActivations, "generation tokens"));
  ZT_ASSIGN_OR_RETURN(logits_,
                      device_.allocate(static_cast<size_t>(B_ * Vp_) * 4,
                                       device::MemoryCategory::kActivations, "generation logits"));
  ZT_ASSIGN_OR_RETURN(
      row_first_, device_.allocate(static_cast<size_t>(B_) * 4,
                                   device::MemoryCategory::kActivations, "generation row starts"));
  ZT_ASSIGN_OR_RETURN(
      positions_, device_.allocate(static_cast<size_t>(B_ * max_chunk_) * 4,
                                   device::MemoryCategory::kActivations, "generation positions"));
  return ok_status();
}

const float* Decoder::weight(const TensorInfo& t, const float*) const {
  return module_->group_parameters(t.group) + (t.offset - group_offset_[t.group]);
}

Status Decoder::linear(float* out, const float* in, const TensorInfo& w, const float* bias,
                       int64_t T, int64_t C, int64_t OC) const {
  return device_.ops().linear_forward(out, in, weight(w, in), bias, B_, T, C, OC);
}

Status Decoder::linear(float* out, const BFloat16* in, const TensorInfo& w, const float* bias,
                       int64_t T, int64_t C, int64_t OC) const {
  return device_.ops().linear_forward_bf16(out, in, weight(w, in), bias, B_, T, C, OC);
}

Status Decoder::linear(BFloat16* out, const BFloat16* in, const TensorInfo& w, const float* bias,
                       int64_t T, int64_t C, int64_t OC) const {
  return device_.ops().linear_forward_bf16(out, in, weight(w, in), bias, B_, T, C, OC);
}

Status Decoder::attend(float* out, const float* qkv, float* k_cache, float* v_cache, int64_t n,
                       int64_t pos, int64_t NH, int64_t NKV, int64_t HD, int64_t window) const {
  return device_.ops().attention_decode(out, qkv, k_cache, v_cache, B_, n, pos, Tmax_, NH, NKV, HD,
                                        window, row_first());
}

Status Decoder::attend(BFloat16* out, const BFloat16* qkv, BFloat16* k_cache, BFloat16* v_cache,
                       int64_t n, int64_t pos, int64_t NH, int64_t NKV, int64_t HD,
                       int64_t window) const {
  return device_.ops().attention_decode_bf16(out, qkv, k_cache, v_cache, B_, n, pos, Tmax_, NH, NKV,
                                             HD, window, row_first());
}

void Decoder::reset() {
  position_ = 0;
  padded_ = false;
}

Status Decoder::set_row_starts(std::span<const int64_t> starts) {
  if (position_ != 0)
    return invalid_argument("generate: row starts are set before the first step (reset first)");
  if (static_cast<int64_t>(starts.size()) != B_)
    return invalid_argument("generate: " + std::to_string(starts.size()) + " row starts for " +
                            std::to_string(B_) + " rows");
  std::vector<int32_t> first(starts.size());
  for (size_t b = 0; b < starts.size(); ++b) {
    if (starts[b] < 0 || starts[b] >= Tmax_)
      return invalid_argument("generate: row " + std::to_string(b) + " starts at " +
                              std::to_string(starts[b]) + ", outside the decoder's " +
                              std::to_string(Tmax_) + " positions");
    first[b] = static_cast<int32_t>(starts[b]);
  }
  row_starts_.assign(starts.begin(), starts.end());
  padded_ = std::any_of(starts.begin(), starts.end(), [](int64_t s) { return s != 0; });
  return device_.copy(row_first_.data(), first.data(), first.size() * 4);
}

StatusOr<const int32_t*> Decoder::row_positions(int64_t n, int64_t pos) {
  std::vector<int32_t> p(static_cast<size_t>(B_ * n));
  for (int64_t b = 0; b < B_; ++b)
    for (int64_t i = 0; i < n; ++i)
      p[static_cast<size_t>(b * n + i)] =
          static_cast<int32_t>(std::max<int64_t>(0, pos + i - row_start(b)));
  ZT_RETURN_IF_ERROR(device_.copy(positions_.data(), p.data(), p.size() * 4));
  return positions_.as<int32_t>();
}

Status Decoder::step(const int32_t* tokens, int64_t n, std::vector<float>* logits) {
  if (n < 1 || position_ + n > Tmax_) {
    return invalid_argument("generate: " + std::to_string(position_ + n) +
                            " positions exceed the decoder's " + std::to_string(Tmax_));
  }
  for (int64_t i = 0; i < B_ * n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= V_) {
      return invalid_argument("generate: token " + std::to_string(tokens[i]) +
                              " at (b=" + std::to_string(i / n) + ", t=" + std::to_string(i % n) +
                              ") is outside the vocabulary [0, " + std::to_string(V_) + ")");
    }
  }
  std::vector<int32_t> chunk;
  for (int64_t done = 0; done < n;) {
    const int64_t m = std::min(max_chunk_, n - done);
    chunk.resize(static_cast<size_t>(B_ * m));
    for (int64_t b = 0; b < B_; ++b) {
      std::copy_n(tokens + b * n + done, m, chunk.data() + b * m);
    }
    ZT_RETURN_IF_ERROR(device_.copy(tokens_.data(), chunk.data(), chunk.size() * 4));
    ZT_RETURN_IF_ERROR(forward(m, position_));
    position_ += m;
    done += m;
  }
  std::vector<float> padded(static_cast<size_t>(B_ * Vp_));
  ZT_RETURN_IF_ERROR(device_.copy(padded.data(), logits_.data(), padded.size() * 4));
  logits->resize(static_cast<size_t>(B_ * V_));
  for (int64_t b = 0; b < B_; ++b) {
    std::copy_n(padded.data() + b * Vp_, V_, logits->data() + b * V_);
  }
  return ok_status();
}

}  // namespace zerotrain::model
