// KV-cached attention for generation (kernels.h, "attention.cu" section;
// the oracle is device/cpu/kernels/attention_decode.cc): the n new tokens'
// keys and values go into the cache (one kernel, as the CPU copies the
// first head of each repeated group), then one block per (b, h, i) attends
// over positions 0 .. pos+i of cache head h / (NH/NKV). The block's warps
// take every kWarps-th position, each keeping an online softmax (max, sum,
// Σ p·v in shared memory), and merge in warp order: no atomics, the same
// bits on every run. Sums are fp32 as on the CPU, in another order.
#include <cstring>
#include <string>

#include "device/cuda/attention_math.h"
#include "device/cuda/cuda_status.h"
#include "device/cuda/kernels/kernels.h"
#include "device/cuda/launch_geometry.h"

namespace zerotrain::device::cuda::kernels {
namespace {

constexpr int kDecodeWarps = 4;

__global__ void decode_store_kernel(float* k_cache, float* v_cache, const float* qkv, int64_t B,
                                    int64_t n, int64_t pos, int64_t Tmax, int64_t NH, int64_t NKV,
                                    int64_t HD) {
  const int64_t C = NH * HD, group = NH / NKV, total = B * n * NKV * HD;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += stride) {
    const int64_t d = idx % HD, g = idx / HD % NKV, i = idx / (HD * NKV) % n;
    const int64_t b = idx / (HD * NKV * n);
    const float* row = qkv + (b * n + i) * 3 * C + g * group * HD + d;
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
__global__ void __launch_bounds__(kDecodeWarps * 32)
    decode_attend_kernel(float* out, const float* qkv, const float* k_cache, const float* v_cache,
                         int64_t n, int64_t pos, int64_t Tmax, int64_t NH, int64_t NKV, int64_t HD,
                         int64_t window, const int32_t* row_first, float scale) {
  extern __shared__ float smem[];
  __shared__ float warp_max[kDecodeWarps], warp_sum_p[kDecodeWarps];
  const int64_t i = blockIdx.x % n, h = blockIdx.x / n % NH, b = blockIdx.x / (n * NH);
  const int64_t C = NH * HD, g = h / (NH / NKV), last = pos + i;
  // A sliding window: keys last-window+1 .. last only; a left-padded row's
  // keys from its first real position (a pad attends to nothing: zeros).
  const int64_t start = row_first != nullptr ? row_first[b] : 0;
  const int64_t lo = window > 0 && last - window + 1 > start ? last - window + 1 : start;
  const float* q = qkv + (b * n + i) * 3 * C + h * HD;
  const float* k = k_cache + (b * NKV + g) * Tmax * HD;
  const float* v = v_cache + (b * NKV + g) * Tmax * HD;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* qs = smem;
  float* y = smem + HD + warp * HD;
  for (int64_t d = threadIdx.x; d < HD; d += blockDim.x) qs[d] = q[d];
  for (int64_t d = lane; d < HD; d += 32) y[d] = 0.0f;
  __syncthreads();

  float m = -INFINITY, l = 0.0f;
  for (int64_t t = lo + warp; t <= last; t += kDecodeWarps) {
    float dot = 0.0f;
    for (int64_t d = lane; d < HD; d += 32) dot = fmaf(qs[d], k[t * HD + d], dot);
    const float s = warp_sum(dot) * scale;
    const float m_new = fmaxf(m, s);
    const float alpha = softmax_rescale(m, m_new);
    const float p = expf(s - m_new);
    l = l * alpha + p;
    m = m_new;
    for (int64_t d = lane; d < HD; d += 32) y[d] = y[d] * alpha + p * v[t * HD + d];
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
  float* o = out + (b * n + i) * C + h * HD;
  for (int64_t d = threadIdx.x; d < HD; d += blockDim.x) {
    float acc = 0.0f;
    for (int w = 0; w < kDecodeWarps; ++w)
      acc += smem[HD + w * HD + d] * softmax_rescale(warp_max[w], M);
    o[d] = L > 0.0f ? acc / L : 0.0f;  // a left pad saw no key (L is 0 or NaN): zeros
  }
}

}  // namespace

Status attention_decode(cudaStream_t stream, float* out, const float* qkv, float* k_cache,
                        float* v_cache, int64_t B, int64_t n, int64_t pos, int64_t Tmax, int64_t NH,
                        int64_t NKV, int64_t HD, int64_t window,
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
  decode_store_kernel<<<static_cast<unsigned>(store.blocks), store.threads, 0, stream>>>(
      k_cache, v_cache, qkv, B, n, pos, Tmax, NH, NKV, HD);
  ZT_RETURN_IF_ERROR(check_launch("attention decode store"));

  const int64_t blocks = B * NH * n;
  if (blocks > 0x7fffffff)
    return invalid_argument("attention_decode: too many (row, head, token)s");
  const size_t smem = static_cast<size_t>((1 + kDecodeWarps) * HD) * sizeof(float);
  if (smem > 48 * 1024) {
    ZT_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
        decode_attend_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  }
  decode_attend_kernel<<<static_cast<unsigned>(blocks), kDecodeWarps * 32, smem, stream>>>(
      out, qkv, k_cache, v_cache, n, pos, Tmax, NH, NKV, HD, window, row_first,
      1.0f / std::sqrt(static_cast<float>(HD)));
  return check_launch("attention decode");
}

}  // namespace zerotrain::device::cuda::kernels
