// LlamaModel's linear layers and lm head GEMMs: fp32, or with bf16_compute
// as autocast runs them — weights (their bf16 view, or rounded into the
// weight scratch) and inputs in bf16, products accumulated in fp32. With
// adapters (linear_fwd/linear_bwd) the inputs are rounded here and the
// outputs and gradients kept fp32; the bf16 path's blocks (linear16) take
// operands already in bf16 and may write bf16 outputs.
#include <algorithm>

#include "device/matmul_desc.h"
#include "device/ops.h"
#include "model/llama/llama_model.h"

namespace zerotrain::model::llama {

Status LlamaModel::allocate_bf16_scratch() {
  if (!bf16_compute()) return ok_status();
  const Bf16Scratch n =
      bf16_scratch(cfg_, options().max_batch, options().max_seq, acts_.head_rows, bf16_acts_);
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
                                                 int64_t head_rows, bool bf16_acts) {
  const int64_t C = cfg.hidden_size, I = cfg.intermediate_size, BT = B * T;
  const int64_t wide = std::max(C, I);
  // The bf16 path's output gradients: d gate and d up side by side, and
  // d q, d k, d v (llama_stages_bf16.cc).
  const int64_t grads = bf16_acts ? std::max(2 * BT * I, BT * (C + 2 * cfg.kv_dim())) : 0;
  return {.weight = std::max(cfg.padded_vocab, wide) * C,
          .input = BT * wide,
          .dout = std::max({BT * wide, head_rows * cfg.padded_vocab, grads})};
}

Status LlamaModel::on_bf16_views(bool all) {
  if (all && adapters() == nullptr) {
    w16_ = {};  // every weight has its view
  } else if (w16_.empty()) {
    ZT_ASSIGN_OR_RETURN(
        w16_, device().allocate(static_cast<size_t>(bf16_scratch(cfg_, 1, 1, 1, false).weight) * 2,
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
  return rounded(p(t), t.numel, w16_);
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

Status LlamaModel::linear16(BFloat16* out, const BFloat16* inp, const TensorInfo& w,
                            const TensorInfo* b, int64_t C, int64_t OC) {
  ZT_ASSIGN_OR_RETURN(const BFloat16* w16, weight_bf16(w));
  return ops().linear_forward_bf16(out, inp, w16, b ? p(*b) : nullptr, 1, B_ * T_, C, OC);
}

Status LlamaModel::linear16(float* out, const BFloat16* inp, const TensorInfo& w,
                            const TensorInfo* b, int64_t C, int64_t OC) {
  ZT_ASSIGN_OR_RETURN(const BFloat16* w16, weight_bf16(w));
  return ops().linear_forward_bf16(out, inp, w16, b ? p(*b) : nullptr, 1, B_ * T_, C, OC);
}

Status LlamaModel::linear16_bwd(float* dinp, const TensorInfo& w, const TensorInfo* b,
                                const BFloat16* dout, const BFloat16* inp, int64_t C, int64_t OC,
                                bool dinp_accumulate) {
  ZT_ASSIGN_OR_RETURN(const BFloat16* w16, weight_bf16(w));
  return ops().linear_backward_bf16(dinp, g(w), b ? g(*b) : nullptr, dout, inp, w16, 1, B_ * T_,
                                    C, OC, dinp_accumulate);
}

Status LlamaModel::linear16_bwd(BFloat16* dinp, const TensorInfo& w, const TensorInfo* b,
                                const BFloat16* dout, const BFloat16* inp, int64_t C, int64_t OC) {
  ZT_ASSIGN_OR_RETURN(const BFloat16* w16, weight_bf16(w));
  return ops().linear_backward_bf16(dinp, g(w), b ? g(*b) : nullptr, dout, inp, w16, 1, B_ * T_,
                                    C, OC);
}

Status LlamaModel::gemm_fwd(float* out, const float* inp, const TensorInfo& w, const float* bias,
                            int64_t rows, int64_t C, int64_t OC) {
  if (held_4bit(w)) return gemm_fwd_4bit(out, inp, w, bias, rows, C, OC);
  if (!bf16_compute()) return ops().linear_forward(out, inp, p(w), bias, 1, rows, C, OC);
  ZT_ASSIGN_OR_RETURN(const BFloat16* w16, weight_bf16(w));
  ZT_ASSIGN_OR_RETURN(const BFloat16* x16, rounded(inp, rows * C, x16_));
  return ops().linear_forward_bf16(out, x16, w16, bias, 1, rows, C, OC);
}

Status LlamaModel::gemm_bwd(float* dinp, float* dweight, float* dbias, const float* dout,
                            const float* inp, const TensorInfo& w, int64_t rows, int64_t C,
                            int64_t OC, bool dinp_accumulate) {
  // dweight null: W is frozen (LoRA), only the input gradient.
  if (held_4bit(w)) {
    ZT_CHECK(dweight == nullptr && dbias == nullptr, w.name, " is held 4-bit and frozen");
    return gemm_bwd_4bit(dinp, dout, w, rows, C, OC, dinp_accumulate);
  }
  if (!bf16_compute()) {
    if (dweight == nullptr)
      return frozen_linear_backward(dinp, dout, p(w), rows, C, OC, dinp_accumulate);
    return ops().linear_backward(dinp, dweight, dbias, dout, inp, p(w), 1, rows, C, OC,
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

// QLoRA: W decoded a tile of whole rows (output features) at a time, so
// the scratch holds a tile, not the weight. body(o0, n, W, W16) gets rows
// [o0, o0 + n) in fp32, and rounded to bf16 under bf16_compute (else null).
Status LlamaModel::for_each_4bit_tile(const TensorInfo& w, int64_t OC, const TileFn& body) {
  for (int64_t o0 = 0, tile = weight_tile_rows(w); o0 < OC; o0 += tile) {
    const int64_t n = std::min(tile, OC - o0);
    ZT_ASSIGN_OR_RETURN(const float* W, weight_rows(w, o0, o0 + n));
    const BFloat16* w16 = nullptr;
    if (bf16_compute()) {
      ZT_ASSIGN_OR_RETURN(w16, rounded(W, n * w.shape[1], w16_));
    }
    ZT_RETURN_IF_ERROR(body(o0, n, W, w16));
  }
  return ok_status();
}

// Forward: out[:, tile] = inp · W[tile]ᵀ + bias[tile] (each output still
// reduces over all of C).
Status LlamaModel::gemm_fwd_4bit(float* out, const float* inp, const TensorInfo& w,
                                 const float* bias, int64_t rows, int64_t C, int64_t OC) {
  const BFloat16* x16 = nullptr;
  if (bf16_compute()) {
    ZT_ASSIGN_OR_RETURN(x16, rounded(inp, rows * C, x16_));
  }
  return for_each_4bit_tile(w, OC, [&](int64_t o0, int64_t n, const float* W, const BFloat16* w16) {
    const device::MatmulDesc d{.m = rows, .n = n, .k = C, .trans_b = true, .ldc = OC};
    const float* b = bias != nullptr ? bias + o0 : nullptr;
    return w16 != nullptr ? ops().matmul_bf16(d, x16, w16, b, out + o0)
                          : ops().matmul(d, inp, W, b, out + o0);
  });
}

// Backward, the input gradient only: dinp (+)= Σ_tiles dout[:, tile] · W[tile].
Status LlamaModel::gemm_bwd_4bit(float* dinp, const float* dout, const TensorInfo& w,
                                 int64_t rows, int64_t C, int64_t OC, bool accumulate) {
  if (dinp == nullptr) return ok_status();
  const BFloat16* d16 = nullptr;
  if (bf16_compute()) {
    ZT_ASSIGN_OR_RETURN(d16, rounded(dout, rows * OC, d16_));
  }
  return for_each_4bit_tile(w, OC, [&](int64_t o0, int64_t n, const float* W, const BFloat16* w16) {
    const device::MatmulDesc d{
        .m = rows, .n = C, .k = n, .beta = accumulate || o0 > 0 ? 1.0f : 0.0f, .lda = OC};
    return w16 != nullptr ? ops().matmul_bf16(d, d16 + o0, w16, nullptr, dinp)
                          : ops().matmul(d, dout + o0, W, nullptr, dinp);
  });
}

}  // namespace zerotrain::model::llama
