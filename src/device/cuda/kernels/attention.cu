// The fp32 causal attention launchers (kernels.h, "attention.cu"): the
// att-keeping pair and the lse-keeping pair of device/cpu/kernels/
// attention.h on the tiled kernels of attention_tiles.cuh. The att form
// keeps att [B,NH,T,T] as the CPU does (after softmax, 0 for keys past the
// query) and its backward reads it; the lse form keeps lse [B,NH,T] and its
// backward recomputes p = exp(s - lse). Both backwards add into dqkv.
// The bf16 forms are in attention_bf16.cu, generation in attention_decode.cu.
#include "device/cuda/kernels/attention_tiles_backward.cuh"
#include "device/cuda/kernels/attention_tiles_forward.cuh"
#include "device/cuda/kernels/kernels.h"

namespace zerotrain::device::cuda::kernels {

namespace tiles = attention_tiles;

Status attention_forward(cudaStream_t stream, float* out, float* att, const float* qkv, int64_t B,
                         int64_t T, int64_t C, int64_t NH) {
  ZT_RETURN_IF_ERROR(tiles::check_dims(C, NH));
  if (B * T * C == 0) return ok_status();
  // Two passes: att rows are normalised before att·v, as on the CPU.
  return tiles::run_forward<float, float, /*kTwoPass=*/true, /*kRound=*/false>(
      stream, out, att, nullptr, qkv, nullptr, B, T, C, NH);
}

Status attention_backward(cudaStream_t stream, float* dqkv, const float* dout, const float* qkv,
                          const float* att, int64_t B, int64_t T, int64_t C, int64_t NH) {
  ZT_RETURN_IF_ERROR(tiles::check_dims(C, NH));
  if (B * T * C == 0) return ok_status();
  return tiles::run_backward<float, float, /*kFromAtt=*/true, /*kRound=*/false>(
      stream, dqkv, dout, qkv, att, nullptr, nullptr, B, T, C, NH);
}

Status attention_forward_lse(cudaStream_t stream, float* out, float* lse, const float* qkv,
                             int64_t B, int64_t T, int64_t C, int64_t NH, const int32_t* first) {
  ZT_RETURN_IF_ERROR(tiles::check_dims(C, NH));
  if (B * T * C == 0) return ok_status();
  // One pass, online softmax.
  return tiles::run_forward<float, float, /*kTwoPass=*/false, /*kRound=*/false>(
      stream, out, nullptr, lse, qkv, first, B, T, C, NH);
}

Status attention_backward_lse(cudaStream_t stream, float* dqkv, const float* dout, const float* qkv,
                              const float* lse, int64_t B, int64_t T, int64_t C, int64_t NH,
                              const int32_t* first) {
  ZT_RETURN_IF_ERROR(tiles::check_dims(C, NH));
  if (B * T * C == 0) return ok_status();
  return tiles::run_backward<float, float, /*kFromAtt=*/false, /*kRound=*/false>(
      stream, dqkv, dout, qkv, nullptr, lse, first, B, T, C, NH);
}

}  // namespace zerotrain::device::cuda::kernels
