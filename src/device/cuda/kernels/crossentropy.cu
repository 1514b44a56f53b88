// The fused softmax cross-entropy launchers of kernels.h
// ("crossentropy.cu"), mirroring device/cpu/kernels/crossentropy.cc: one
// block per row of logits [B,T,Vp]; each thread keeps a running max and
// sum of exponentials over its columns (layer_math.h's MaxSum, the CPU's
// fast_exp bit for bit), the block combines them in a fixed order, and the
// backward writes dloss·(softmax − one-hot) from the row's log-sum-exp.
// No probability array is ever written.
//
// dlogits may be the logits themselves: every read of the row (the max and
// sum, and the target's logit) happens before the block barrier, and after
// it each thread reads a column just before overwriting that same column.
#include <cstdint>
#include <limits>

#include "device/cuda/cuda_status.h"
#include "device/cuda/element_math.h"
#include "device/cuda/kernels/kernels.h"
#include "device/cuda/kernels/layer_util.cuh"
#include "device/cuda/layer_math.h"

namespace zerotrain::device::cuda::kernels {
namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;

// Row i: losses[i] (0 for a negative target), lse[i] when given, and with
// kBackward dlogits[i, :] (zeros for a negative target and columns >= V).
template <typename Elem, bool kBackward>
__global__ void crossentropy_kernel(float* losses, float* lse, typename Elem::T* dlogits,
                                    const float* logits, const int32_t* targets, float dloss,
                                    int64_t V, int64_t Vp) {
  __shared__ MaxSum warp_parts[kWarps];
  const int64_t i = blockIdx.x;
  const float* row = logits + i * Vp;
  const int32_t target = targets[i];
  const float target_logit = threadIdx.x == 0 && target >= 0 ? row[target] : 0.0f;
  MaxSum a{-INFINITY, 0.0f};
  for (int64_t v = threadIdx.x; v < V; v += kThreads) a = max_sum_add(a, row[v]);
  for (int o = 16; o > 0; o >>= 1) {
    const MaxSum b{__shfl_xor_sync(0xffffffffu, a.m, o), __shfl_xor_sync(0xffffffffu, a.s, o)};
    a = max_sum_combine(a, b);
  }
  if (threadIdx.x % 32 == 0) warp_parts[threadIdx.x / 32] = a;
  __syncthreads();  // the whole row has been read: dlogits may overwrite it now
  MaxSum total = warp_parts[0];
  for (int w = 1; w < kWarps; ++w) total = max_sum_combine(total, warp_parts[w]);
  const float l = max_sum_log(total);
  if (threadIdx.x == 0) {
    if (lse) lse[i] = l;
    losses[i] = target < 0 ? 0.0f : sub_rn(l, target_logit);
  }
  if constexpr (kBackward) {
    typename Elem::T* drow = dlogits + i * Vp;
    for (int64_t v = threadIdx.x; v < Vp; v += kThreads) {
      float g = 0.0f;
      if (target >= 0 && v < V) {
        g = mul_rn(dloss, cephes_exp(sub_rn(row[v], l)));
        if (v == target) g = sub_rn(g, dloss);
      }
      Elem::store(drow, v, g);
    }
  }
}

// The CPU's checks and messages: Vp >= V, then every target < V (negative
// ones are ignored tokens). Waits for `stream`.
Status check_targets(cudaStream_t stream, const int32_t* targets, int64_t B, int64_t T, int64_t V,
                     int64_t Vp) {
  if (Vp < V) {
    return invalid_argument(detail::concat("crossentropy: padded vocab Vp=", Vp, " < V=", V));
  }
  int64_t bad = -1;
  int32_t id = 0;
  ZT_RETURN_IF_ERROR(first_out_of_range(stream, targets, B * T, std::numeric_limits<int64_t>::min(),
                                        V, &bad, &id));
  if (bad < 0) return ok_status();
  return invalid_argument(detail::concat("crossentropy: target ", id, " at (b=", bad / T,
                                         ", t=", bad % T, ") is outside [0, V=", V, ")"));
}

template <typename Elem, bool kBackward>
Status run_crossentropy(cudaStream_t stream, float* losses, float* lse, typename Elem::T* dlogits,
                        const float* logits, const int32_t* targets, float dloss, int64_t B,
                        int64_t T, int64_t V, int64_t Vp) {
  ZT_RETURN_IF_ERROR(check_targets(stream, targets, B, T, V, Vp));
  if (B * T <= 0) return ok_status();
  crossentropy_kernel<Elem, kBackward><<<static_cast<unsigned>(B * T), kThreads, 0, stream>>>(
      losses, lse, dlogits, logits, targets, dloss, V, Vp);
  return check_launch("crossentropy_kernel");
}

}  // namespace

Status crossentropy_forward(cudaStream_t stream, float* losses, float* lse, const float* logits,
                            const int32_t* targets, int64_t B, int64_t T, int64_t V, int64_t Vp) {
  return run_crossentropy<F32Elem, false>(stream, losses, lse, nullptr, logits, targets, 0.0f, B, T,
                                          V, Vp);
}

Status crossentropy_forward_backward(cudaStream_t stream, float* losses, float* dlogits,
                                     const float* logits, const int32_t* targets, float dloss,
                                     int64_t B, int64_t T, int64_t V, int64_t Vp) {
  return run_crossentropy<F32Elem, true>(stream, losses, nullptr, dlogits, logits, targets, dloss,
                                         B, T, V, Vp);
}

Status crossentropy_forward_backward_bf16(cudaStream_t stream, float* losses, BFloat16* dlogits,
                                          const float* logits, const int32_t* targets, float dloss,
                                          int64_t B, int64_t T, int64_t V, int64_t Vp) {
  return run_crossentropy<Bf16Elem, true>(stream, losses, nullptr,
                                          reinterpret_cast<uint16_t*>(dlogits), logits, targets,
                                          dloss, B, T, V, Vp);
}

}  // namespace zerotrain::device::cuda::kernels
