// The bf16 causal attention launchers (kernels.h, "attention.cu" section):
// device/cpu/kernels/attention_bf16.cc's forms on the tiled kernels of
// attention_tiles.cuh, with its rounding points: qkv and dout come in bf16
// (exact in fp32, so fp32 products of them are the bf16 products with fp32
// accumulation); softmax and its backward run in fp32 from fp32 scores;
// p is rounded to bf16 for p·v and pᵀ·dy, d preatt for dq and dk; out and
// dqkv are rounded once from their fp32 sums, dqkv overwritten. att (fp32,
// after softmax, 0 past the query) or lse is kept, exactly one of them.
#include "device/cuda/kernels/attention_tiles_backward.cuh"
#include "device/cuda/kernels/attention_tiles_forward.cuh"
#include "device/cuda/kernels/kernels.h"

namespace zerotrain::device::cuda::kernels {

Status attention_forward_bf16(cudaStream_t stream, BFloat16* out, float* att, float* lse,
                              const BFloat16* qkv, int64_t B, int64_t T, int64_t C, int64_t NH,
                              const int32_t* first) {
  ZT_RETURN_IF_ERROR(attention_tiles::check_dims(C, NH));
  if ((att == nullptr) == (lse == nullptr))
    return invalid_argument("attention_forward_bf16: exactly one of att and lse is kept");
  if (B * T * C == 0) return ok_status();
  // Two passes: p is normalised, then rounded, before p·v.
  return attention_tiles::run_forward<BFloat16, BFloat16, /*kTwoPass=*/true, /*kRound=*/true>(
      stream, out, att, lse, qkv, first, B, T, C, NH);
}

Status attention_backward_bf16(cudaStream_t stream, BFloat16* dqkv, const BFloat16* dout,
                               const BFloat16* qkv, const float* att, const float* lse, int64_t B,
                               int64_t T, int64_t C, int64_t NH, const int32_t* first) {
  ZT_RETURN_IF_ERROR(attention_tiles::check_dims(C, NH));
  if ((att == nullptr) == (lse == nullptr))
    return invalid_argument("attention_backward_bf16: exactly one of att and lse is given");
  if (B * T * C == 0) return ok_status();
  if (att != nullptr) {
    return attention_tiles::run_backward<BFloat16, BFloat16, /*kFromAtt=*/true, /*kRound=*/true>(
        stream, dqkv, dout, qkv, att, nullptr, first, B, T, C, NH);
  }
  return attention_tiles::run_backward<BFloat16, BFloat16, /*kFromAtt=*/false, /*kRound=*/true>(
      stream, dqkv, dout, qkv, nullptr, lse, first, B, T, C, NH);
}

}  // namespace zerotrain::device::cuda::kernels
