// GptModel's linear layers: the fp32 kernels, or with bf16_compute the bf16
// kernels on operands rounded from fp32 into the model's bf16 scratch.
#include <algorithm>

#include "kernels/cpu/ops.h"
#include "model/gpt_model.h"
#include "tensor/convert.h"

namespace zerotrain::model {

namespace kc = kernels::cpu;

namespace {

// dst = bf16(src), round to nearest even, in parallel 64 Ki-element chunks.
const kc::Bf16Bits* to_bf16(tensor::AlignedBuffer<tensor::BFloat16>& dst, const float* src,
                            int64_t n) {
  ZT_CHECK(static_cast<size_t>(n) <= dst.size(), "bf16 scratch too small: ", n, " > ", dst.size());
  constexpr int64_t kChunk = 1 << 16;
  tensor::BFloat16* out = dst.data();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i += kChunk) {
    const size_t len = static_cast<size_t>(std::min(kChunk, n - i));
    tensor::fp32_to_bf16({src + i, len}, {out + i, len});
  }
  // BFloat16 is a standard-layout wrapper of its uint16_t bits.
  return reinterpret_cast<const kc::Bf16Bits*>(out);
}

}  // namespace

Status GptModel::linear_fwd(float* out, const float* inp, const float* w, const float* b, int64_t C,
                            int64_t OC) {
  if (!options_.bf16_compute) return kc::linear_forward(out, inp, w, b, B_, T_, C, OC);
  const kc::Bf16Bits* w16 = to_bf16(w16_, w, OC * C);
  const kc::Bf16Bits* x16 = to_bf16(x16_, inp, B_ * T_ * C);
  return kc::linear_forward_bf16(out, x16, w16, b, B_, T_, C, OC);
}

Status GptModel::linear_bwd(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                            const float* w, int64_t C, int64_t OC, bool dinp_accumulate) {
  if (!options_.bf16_compute) {
    return kc::linear_backward(dinp, dw, db, dout, inp, w, B_, T_, C, OC, dinp_accumulate);
  }
  const kc::Bf16Bits* w16 = to_bf16(w16_, w, OC * C);
  const kc::Bf16Bits* x16 = to_bf16(x16_, inp, B_ * T_ * C);
  const kc::Bf16Bits* d16 = to_bf16(d16_, dout, B_ * T_ * OC);
  return kc::linear_backward_bf16(dinp, dw, db, d16, x16, w16, B_, T_, C, OC, dinp_accumulate);
}

void GptModel::prepare_head() {
  if (options_.bf16_compute) {
    to_bf16(w16_, p(layout_.wte()), cfg_.padded_vocab * cfg_.n_embd);
  }
}

Status GptModel::head_fwd(float* logits, const float* lnf, int64_t rows) {
  const int64_t C = cfg_.n_embd, Vp = cfg_.padded_vocab;
  if (!options_.bf16_compute) {
    return kc::linear_forward(logits, lnf, p(layout_.wte()), nullptr, 1, rows, C, Vp);
  }
  const auto* w16 = reinterpret_cast<const kc::Bf16Bits*>(w16_.data());  // prepare_head's
  const kc::Bf16Bits* x16 = to_bf16(x16_, lnf, rows * C);
  return kc::linear_forward_bf16(logits, x16, w16, nullptr, 1, rows, C, Vp);
}

Status GptModel::head_bwd(float* dln, float* dwte, const float* dlogits, const float* lnf,
                          int64_t rows) {
  const int64_t C = cfg_.n_embd, Vp = cfg_.padded_vocab;
  if (!options_.bf16_compute) {
    return kc::linear_backward(dln, dwte, nullptr, dlogits, lnf, p(layout_.wte()), 1, rows, C, Vp);
  }
  const auto* w16 = reinterpret_cast<const kc::Bf16Bits*>(w16_.data());
  const kc::Bf16Bits* x16 = to_bf16(x16_, lnf, rows * C);
  const kc::Bf16Bits* d16 = to_bf16(d16_, dlogits, rows * Vp);
  return kc::linear_backward_bf16(dln, dwte, nullptr, d16, x16, w16, 1, rows, C, Vp);
}

}  // namespace zerotrain::model
