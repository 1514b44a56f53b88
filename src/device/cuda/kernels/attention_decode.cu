// KV-cached attention for generation (kernels.h, "attention.cu" section;
// the oracle is device/cpu/kernels/attention_decode.cc): the n new tokens'
// keys and values go into the cache (one kernel, as the CPU copies the
// first head of each repeated group), then one block per (b, h, i) attends
// over positions 0 .. pos+i of cache head h / (NH/NKV). The block's warps
// take every kWarps-th position, each keeping an online softmax (max, sum,
// Σ p·v in shared memory), and merge in warp order: no atomics, the same
// bits on every run. Sums are fp32 as on the CPU, in another order. The
// bf16 form (bf16 qkv, caches and out) is the same kernels on Bf16Elem:
// loads widen exactly, out is rounded once, and the probabilities are
// rounded to bf16 before p·v as the CPU rounds them (normalized), so it
// takes two passes: the max and the sum first, then Σ bf16(p)·v.
#include <cstring>
#include <string>
#include <type_traits>

#include "device/cuda/attention_math.h"
#include "device/cuda/cuda_status.h"
#include "device/cuda/element_math.h"
#include "device/cuda/kernels/kernels.h"
#include "device/cuda/launch_geometry.h"

namespace zerotrain::device::cuda::kernels {
namespace {

constexpr int kDecodeWarps = 4;

template <typename E>
__global__ void decode_store_kernel(typename E::T* k_cache, typename E::T* v_cache,
                                    const typename E::T* qkv, int64_t B, int64_t n, int64_t pos,
                                    int64_t Tmax, int64_t NH, int64_t NKV, int64_t HD) {
  const int64_t C = NH * HD, group = NH / NKV, total = B * n * NKV * HD;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += stride) {
    const int64_t d = idx % HD, g = idx / HD % NKV, i = idx / (HD * NKV) % n;
    const int64_t b = idx / (HD * NKV * n);
    const typename E::T* row = qkv + (b * n + i) * 3 * C + g * group * HD + d;
    const int64_t at = ((b * NKV + g) * Tmax + pos + i) * HD + d;
    k_cache[at] = row[C];
    v_cache[at] = row[2 * C];
  }
}

// Σ over a warp by butterfly: every lane ends with the same bits.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Block (b, h, i) = blockIdx.x as ((b·NH + h)·n + i). Shared: q [HD], then
// each warp's Σ p·v [kDecodeWarps][HD].
template <typename E>
__global__ void __launch_bounds__(kDecodeWarps * 32)
    decode_attend_kernel(typename E::T* out, const typename E::T* qkv,
                         const typename E::T* k_cache, const typename E::T* v_cache, int64_t n,
                         int64_t pos, int64_t Tmax, int64_t NH, int64_t NKV, int64_t HD,
                         int64_t window, const int32_t* row_first, float scale) {
  using T = typename E::T;
  extern __shared__ float smem[];
  __shared__ float warp_max[kDecodeWarps], warp_sum_p[kDecodeWarps];
  const int64_t i = blockIdx.x % n, h = blockIdx.x / n % NH, b = blockIdx.x / (n * NH);
  const int64_t C = NH * HD, g = h / (NH / NKV), last = pos + i;
  // A sliding window: keys last-window+1 .. last only; a left-padded row's
  // keys from its first real position (a pad attends to nothing: zeros).
  const int64_t start = row_first != nullptr ? row_first[b] : 0;
  const int64_t lo = window > 0 && last - window + 1 > start ? last - window + 1 : start;
  const T* q = qkv + (b * n + i) * 3 * C + h * HD;
  const T* k = k_cache + (b * NKV + g) * Tmax * HD;
  const T* v = v_cache + (b * NKV + g) * Tmax * HD;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* qs = smem;
  float* y = smem + HD + warp * HD;
  for (int64_t d = threadIdx.x; d < HD; d += blockDim.x) qs[d] = E::load(q, d);
  for (int64_t d = lane; d < HD; d += 32) y[d] = 0.0f;
  __syncthreads();

  constexpr bool kRoundP = std::is_same_v<E, Bf16Elem>;
  const auto score = [&](int64_t t) {
    float dot = 0.0f;
    for (int64_t d = lane; d < HD; d += 32) dot = fmaf(qs[d], E::load(k, t * HD + d), dot);
    return warp_sum(dot) * scale;
  };
  float m = -INFINITY, l = 0.0f;
  for (int64_t t = lo + warp; t <= last; t += kDecodeWarps) {
    const float s = score(t);
    const float m_new = fmaxf(m, s);
    const float alpha = softmax_rescale(m, m_new);
    const float p = expf(s - m_new);
    l = l * alpha + p;
    m = m_new;
    if constexpr (!kRoundP) {
      for (int64_t d = lane; d < HD; d += 32) y[d] = y[d] * alpha + p * E::load(v, t * HD + d);
    }
  }
  if (lane == 0) {
    warp_max[warp] = m;
    warp_sum_p[warp] = l;
  }
  __syncthreads();

  float M = -INFINITY;
  for (int w = 0; w < kDecodeWarps; ++w) M = fmaxf(M, warp_max[w]);
  float L = 0.0f;
  for (int w = 0; w < kDecodeWarps; ++w) L += warp_sum_p[w] * softmax_rescale(warp_max[w], M);
  T* o = out + (b * n + i) * C + h * HD;
  if constexpr (kRoundP) {
    // The second pass: each warp's Σ bf16(exp(s - M) / L)·v, summed in warp order.
    if (L > 0.0f) {
      for (int64_t t = lo + warp; t <= last; t += kDecodeWarps) {
        const float p = round_bf16(expf(score(t) - M) / L);
        for (int64_t d = lane; d < HD; d += 32) y[d] += p * E::load(v, t * HD + d);
      }
    }
    __syncthreads();
    for (int64_t d = threadIdx.x; d < HD; d += blockDim.x) {
      float acc = 0.0f;
      for (int w = 0; w < kDecodeWarps; ++w) acc += smem[HD + w * HD + d];
      E::store(o, d, L > 0.0f ? acc : 0.0f);  // a left pad saw no key: zeros
    }
  } else {
    for (int64_t d = threadIdx.x; d < HD; d += blockDim.x) {
      float acc = 0.0f;
      for (int w = 0; w < kDecodeWarps; ++w)
        acc += smem[HD + w * HD + d] * softmax_rescale(warp_max[w], M);
      E::store(o, d, L > 0.0f ? acc / L : 0.0f);  // a left pad saw no key (L 0 or NaN): zeros
    }
  }
}

template <typename E>
Status decode(cudaStream_t stream, typename E::T* out, const typename E::T* qkv,
              typename E::T* k_cache, typename E::T* v_cache, int64_t B, int64_t n, int64_t pos,
              int64_t Tmax, int64_t NH, int64_t NKV, int64_t HD, int64_t window,
              const int32_t* row_first) {
  // The checks of CpuOps::attention_decode, with its message.
  if (pos < 0 || n < 1 || pos + n > Tmax || NKV < 1 || NH % NKV != 0 || window < 0) {
    return invalid_argument("attention_decode: positions [" + std::to_string(pos) + ", " +
                            std::to_string(pos + n) + ") in a cache of " + std::to_string(Tmax) +
                            ", " + std::to_string(NH) + " heads over " + std::to_string(NKV) +
                            " key/value heads, window " + std::to_string(window));
  }
  if (B <= 0 || NH <= 0 || HD <= 0) return ok_status();
  const Grid store = grid_1d(B * n * NKV * HD);
  decode_store_kernel<E><<<static_cast<unsigned>(store.blocks), store.threads, 0, stream>>>(
      k_cache, v_cache, qkv, B, n, pos, Tmax, NH, NKV, HD);
  ZT_RETURN_IF_ERROR(check_launch("attention decode store"));

  const int64_t blocks = B * NH * n;
  if (blocks > 0x7fffffff)
    return invalid_argument("attention_decode: too many (row, head, token)s");
  const size_t smem = static_cast<size_t>((1 + kDecodeWarps) * HD) * sizeof(float);
  if (smem > 48 * 1024) {
    ZT_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(decode_attend_kernel<E>,
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(smem)));
  }
  decode_attend_kernel<E><<<static_cast<unsigned>(blocks), kDecodeWarps * 32, smem, stream>>>(
      out, qkv, k_cache, v_cache, n, pos, Tmax, NH, NKV, HD, window, row_first,
      1.0f / std::sqrt(static_cast<float>(HD)));
  return check_launch("attention decode");
}

}  // namespace

Status attention_decode(cudaStream_t stream, float* out, const float* qkv, float* k_cache,
                        float* v_cache, int64_t B, int64_t n, int64_t pos, int64_t Tmax, int64_t NH,
                        int64_t NKV, int64_t HD, int64_t window,
                        const int32_t* row_first) {
  return decode<F32Elem>(stream, out, qkv, k_cache, v_cache, B, n, pos, Tmax, NH, NKV, HD, window,
                         row_first);
}

Status attention_decode_bf16(cudaStream_t stream, BFloat16* out, const BFloat16* qkv,
                             BFloat16* k_cache, BFloat16* v_cache, int64_t B, int64_t n,
                             int64_t pos, int64_t Tmax, int64_t NH, int64_t NKV, int64_t HD,
                             int64_t window, const int32_t* row_first) {
  const auto bits = [](auto* p) {
    using U = std::conditional_t<std::is_const_v<std::remove_pointer_t<decltype(p)>>,
                                 const uint16_t, uint16_t>;
    return reinterpret_cast<U*>(p);
  };
  return decode<Bf16Elem>(stream, bits(out), bits(qkv), bits(k_cache), bits(v_cache), B, n, pos,
                          Tmax, NH, NKV, HD, window, row_first);
}

}  // namespace zerotrain::device::cuda::kernels
