// LlamaModel's linear layers and lm head GEMMs: fp32, or with bf16_compute
// as autocast runs them — weights (their bf16 view, or rounded into the
// weight scratch) and inputs rounded to bf16, products accumulated in fp32,
// outputs and every gradient kept in fp32. The attention, norms and SwiGLU
// stay fp32.
#include "device/ops.h"
#include "model/llama/llama_model.h"

namespace zerotrain::model::llama {

Status LlamaModel::allocate_bf16_scratch() {
  if (!bf16_compute()) return ok_status();
  const Bf16Scratch n = bf16_scratch(cfg_, options().max_batch, options().max_seq, acts_.head_rows);
  device::Device& d = device();
  using device::MemoryCategory;
  ZT_ASSIGN_OR_RETURN(w16_, d.allocate(static_cast<size_t>(n.weight) * 2,
                                       MemoryCategory::kActivations, "bf16 weight scratch"));
  ZT_ASSIGN_OR_RETURN(x16_, d.allocate(static_cast<size_t>(n.input) * 2,
                                       MemoryCategory::kActivations, "bf16 input scratch"));
  ZT_ASSIGN_OR_RETURN(d16_, d.allocate(static_cast<size_t>(n.dout) * 2,
                                       MemoryCategory::kActivations, "bf16 gradient scratch"));
  return ok_status();
}

LlamaModel::Bf16Scratch LlamaModel::bf16_scratch(const LlamaConfig& cfg, int64_t B, int64_t T,
                                                 int64_t head_rows) {
  const int64_t C = cfg.hidden_size, I = cfg.intermediate_size, BT = B * T;
  const int64_t wide = std::max(C, I);
  return {.weight = std::max(cfg.padded_vocab, wide) * C,
          .input = BT * wide,
          .dout = std::max(BT * wide, head_rows * cfg.padded_vocab)};
}

Status LlamaModel::on_bf16_views(bool all) {
  if (all && adapters() == nullptr) {
    w16_ = {};  // every weight has its view
  } else if (w16_.empty()) {
    ZT_ASSIGN_OR_RETURN(
        w16_, device().allocate(static_cast<size_t>(bf16_scratch(cfg_, 1, 1, 1).weight) * 2,
                                device::MemoryCategory::kActivations, "bf16 weight scratch"));
  }
  return ok_status();
}

StatusOr<const BFloat16*> LlamaModel::rounded(const float* x, int64_t n,
                                              const device::Buffer& scratch) {
  ZT_CHECK(static_cast<size_t>(n) * 2 <= scratch.bytes(), "bf16 scratch too small: ", n);
  BFloat16* out = scratch.as<BFloat16>();
  ZT_RETURN_IF_ERROR(
      ops().convert(ConstTensor(x, DType::kFloat32, static_cast<size_t>(n), &device()),
                    Tensor(out, DType::kBFloat16, static_cast<size_t>(n), &device())));
  return out;
}

StatusOr<const BFloat16*> LlamaModel::weight_bf16(const TensorInfo& t) {
  // With adapters the views are of the trainable layout: base weights round here.
  const BFloat16* view = adapters() == nullptr ? group_parameters_bf16(t.group) : nullptr;
  if (view != nullptr) return view + (t.offset - layout().groups()[t.group].offset);
  ZT_ASSIGN_OR_RETURN(const float* w, weight(t));
  return rounded(w, t.numel, w16_);
}

Status LlamaModel::linear_fwd(float* out, const float* inp, const TensorInfo& w,
                              const TensorInfo* b, int64_t C, int64_t OC) {
  ZT_RETURN_IF_ERROR(gemm_fwd(out, inp, w, b ? p(*b) : nullptr, B_ * T_, C, OC));
  return lora_forward(out, inp, w, B_ * T_);
}

Status LlamaModel::linear_bwd(float* dinp, const TensorInfo& w, const TensorInfo* b,
                              const float* dout, const float* inp, int64_t C, int64_t OC,
                              bool dinp_accumulate) {
  ZT_RETURN_IF_ERROR(gemm_bwd(dinp, frozen(w) ? nullptr : g(w), b && !frozen(*b) ? g(*b) : nullptr,
                              dout, inp, w, B_ * T_, C, OC, dinp_accumulate));
  return lora_backward(dinp, dout, inp, w, B_ * T_);
}

Status LlamaModel::gemm_fwd(float* out, const float* inp, const TensorInfo& w, const float* bias,
                            int64_t rows, int64_t C, int64_t OC) {
  if (!bf16_compute()) {
    ZT_ASSIGN_OR_RETURN(const float* W, weight(w));
    return ops().linear_forward(out, inp, W, bias, 1, rows, C, OC);
  }
  ZT_ASSIGN_OR_RETURN(const BFloat16* w16, weight_bf16(w));
  ZT_ASSIGN_OR_RETURN(const BFloat16* x16, rounded(inp, rows * C, x16_));
  return ops().linear_forward_bf16(out, x16, w16, bias, 1, rows, C, OC);
}

Status LlamaModel::gemm_bwd(float* dinp, float* dweight, float* dbias, const float* dout,
                            const float* inp, const TensorInfo& w, int64_t rows, int64_t C,
                            int64_t OC, bool dinp_accumulate) {
  // dweight null: W is frozen (LoRA), only the input gradient.
  if (!bf16_compute()) {
    ZT_ASSIGN_OR_RETURN(const float* W, weight(w));
    if (dweight == nullptr)
      return frozen_linear_backward(dinp, dout, W, rows, C, OC, dinp_accumulate);
    return ops().linear_backward(dinp, dweight, dbias, dout, inp, W, 1, rows, C, OC,
                                 dinp_accumulate);
  }
  ZT_ASSIGN_OR_RETURN(const BFloat16* w16, weight_bf16(w));
  ZT_ASSIGN_OR_RETURN(const BFloat16* d16, rounded(dout, rows * OC, d16_));
  if (dweight == nullptr)
    return frozen_linear_backward_bf16(dinp, d16, w16, rows, C, OC, dinp_accumulate);
  ZT_ASSIGN_OR_RETURN(const BFloat16* x16, rounded(inp, rows * C, x16_));
  return ops().linear_backward_bf16(dinp, dweight, dbias, d16, x16, w16, 1, rows, C, OC,
                                    dinp_accumulate);
}

}  // namespace zerotrain::model::llama
