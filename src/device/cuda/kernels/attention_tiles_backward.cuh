// Internal to kernels/: the tiled attention backward (see
// attention_tiles.cuh for the scheme), its two kernels and their launcher,
// for the fp32 and bf16 forms.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "device/cuda/kernels/attention_tiles.cuh"

namespace zerotrain::device::cuda::kernels::attention_tiles {

// p of the thread's entries: read from att (kFromAtt) or exp(s - lse)
// recomputed; 0 where masked.
template <int D, bool kFromAtt, int kRq, int kRk>
__device__ __forceinline__ void probabilities(float (&p)[kRq][kRk], const float* Qs,
                                              const float* Ks, const int64_t (&r)[kRq],
                                              const int64_t (&lo)[kRq], const float (&lse)[kRq],
                                              int64_t k0, const BackwardArgs& a, int64_t bh) {
  const int tx = threadIdx.x % 16;
  if constexpr (kFromAtt) {
#pragma unroll
    for (int i = 0; i < kRq; ++i)
#pragma unroll
      for (int j = 0; j < kRk; ++j) {
        const int64_t c = k0 + tx + 16 * j;
        p[i][j] = r[i] < a.T && attends(r[i], c, lo[i]) ? a.att[(bh * a.T + r[i]) * a.T + c] : 0.0f;
      }
  } else {
    masked_scores<D>(p, Qs, Ks, r, lo, k0, a.T, a.scale);
#pragma unroll
    for (int i = 0; i < kRq; ++i)
#pragma unroll
      for (int j = 0; j < kRk; ++j) p[i][j] = p[i][j] == -INFINITY ? 0.0f : expf(p[i][j] - lse[i]);
  }
}

// dq of one (b, h, query tile): pass 1 Σ_j p·dp per row (to a.dsum),
// pass 2 dq = scale·Σ_j ds·k. kRound: ds rounded to bf16 (the bf16 form).
template <int D, typename In, typename Grad, bool kFromAtt, bool kRound>
__global__ void __launch_bounds__(kThreads, 2) dq_kernel(BackwardArgs a) {
  using Tl = Tiles<D>;
  constexpr int kRq = Tl::kRq, kRk = Tl::kRk, kE = Tl::kE, kBq = Tl::kBq, kBk = Tl::kBk;
  extern __shared__ float smem[];
  float* Qs = smem;
  float* dYs = Qs + Tl::kQ;
  float* Ks = dYs + Tl::kQ;
  float* Vs = Ks + Tl::kK;
  float* Ps = Vs + Tl::kK;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t bh = blockIdx.x % a.BH, b = bh / a.NH, h = bh % a.NH;
  const int64_t q0 = (a.ntiles - 1 - static_cast<int64_t>(blockIdx.x / a.BH)) * kBq;
  const int64_t T = a.T, ld = 3 * a.C;
  const In* q = static_cast<const In*>(a.qkv) + b * T * ld + h * a.hs;
  const In* dy = static_cast<const In*>(a.dout) + b * T * a.C + h * a.hs;
  if constexpr (!kFromAtt) load_tile<D, kBq>(Qs, q, ld, q0, T, a.hs);
  load_tile<D, kBq>(dYs, dy, a.C, q0, T, a.hs);

  int64_t r[kRq], lo[kRq];
  float lse[kRq], dsum[kRq];
#pragma unroll
  for (int i = 0; i < kRq; ++i) {
    r[i] = q0 + ty + 16 * i;
    lo[i] = a.first != nullptr && r[i] < T ? a.first[b * T + r[i]] : 0;
    lse[i] = !kFromAtt && r[i] < T ? a.lse[bh * T + r[i]] : 0.0f;
    dsum[i] = 0.0f;
  }
  const int64_t key_tiles = ((q0 + kBq < T ? q0 + kBq : T) - 1 + kBk) / kBk;

  for (int64_t kt = 0; kt < key_tiles; ++kt) {
    const int64_t k0 = kt * kBk;
    bool any = false;
#pragma unroll
    for (int i = 0; i < kRq; ++i) any |= r[i] < T && attends_any(r[i], lo[i], k0, k0 + kBk);
    if (!__syncthreads_or(any)) continue;
    if constexpr (!kFromAtt) load_tile<D, kBk>(Ks, q + a.C, ld, k0, T, a.hs);
    load_tile<D, kBk>(Vs, q + 2 * a.C, ld, k0, T, a.hs);
    __syncthreads();
    float p[kRq][kRk], dp[kRq][kRk];
    probabilities<D, kFromAtt>(p, Qs, Ks, r, lo, lse, k0, a, bh);
    dot_tile<D>(dp, dYs, Vs);
#pragma unroll
    for (int i = 0; i < kRq; ++i)
#pragma unroll
      for (int j = 0; j < kRk; ++j)
        if (p[i][j] != 0.0f) dsum[i] = fmaf(p[i][j], dp[i][j], dsum[i]);
  }
#pragma unroll
  for (int i = 0; i < kRq; ++i) {
    dsum[i] = sum16(dsum[i]);
    if (tx == 0 && r[i] < T) a.dsum[bh * T + r[i]] = dsum[i];
  }

  float dq[kRq][kE];
#pragma unroll
  for (int i = 0; i < kRq; ++i)
#pragma unroll
    for (int e = 0; e < kE; ++e) dq[i][e] = 0.0f;
  for (int64_t kt = 0; kt < key_tiles; ++kt) {
    const int64_t k0 = kt * kBk;
    bool any = false;
#pragma unroll
    for (int i = 0; i < kRq; ++i) any |= r[i] < T && attends_any(r[i], lo[i], k0, k0 + kBk);
    if (!__syncthreads_or(any)) continue;
    load_tile<D, kBk>(Ks, q + a.C, ld, k0, T, a.hs);
    load_tile<D, kBk>(Vs, q + 2 * a.C, ld, k0, T, a.hs);
    __syncthreads();
    float p[kRq][kRk], dp[kRq][kRk];
    probabilities<D, kFromAtt>(p, Qs, Ks, r, lo, lse, k0, a, bh);
    dot_tile<D>(dp, dYs, Vs);
#pragma unroll
    for (int i = 0; i < kRq; ++i)
#pragma unroll
      for (int j = 0; j < kRk; ++j) {
        const bool ok = r[i] < T && attends(r[i], k0 + tx + 16 * j, lo[i]);
        p[i][j] = ok ? softmax_grad(p[i][j], dp[i][j], dsum[i]) : 0.0f;
      }
    store_p<kRound, kRq, kRk, Tl::kPld>(Ps, p);
    __syncthreads();
    acc_pv<D, kRq, kBk, Tl::kPld>(dq, Ps, Ks);
  }

  Grad* g = static_cast<Grad*>(a.dqkv) + b * T * ld + h * a.hs;
#pragma unroll
  for (int i = 0; i < kRq; ++i) {
    if (r[i] >= T) continue;
#pragma unroll
    for (int e = 0; e < kE; ++e) {
      const int d = tx + 16 * e;
      if (d < a.hs) put_grad(g, r[i] * ld + d, a.scale * dq[i][e]);
    }
  }
}

// dk, dv of one (b, h, key tile), over the query tiles in order:
// dv += pᵀ·dy, dk += scale·dsᵀ·q (p and ds rounded to bf16 when kRound).
template <int D, typename In, typename Grad, bool kFromAtt, bool kRound>
__global__ void __launch_bounds__(kThreads, 2) dkv_kernel(BackwardArgs a) {
  using Tl = Tiles<D>;
  constexpr int kRq = Tl::kRq, kRk = Tl::kRk, kE = Tl::kE, kBq = Tl::kBq, kBk = Tl::kBk;
  extern __shared__ float smem[];
  float* Qs = smem;
  float* dYs = Qs + Tl::kQ;
  float* Ks = dYs + Tl::kQ;
  float* Vs = Ks + Tl::kK;
  float* Ps = Vs + Tl::kK;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  // The first key tiles meet the most queries: they start first.
  const int64_t bh = blockIdx.x % a.BH, b = bh / a.NH, h = bh % a.NH;
  const int64_t k0 = static_cast<int64_t>(blockIdx.x / a.BH) * kBk;
  const int64_t T = a.T, ld = 3 * a.C;
  const In* q = static_cast<const In*>(a.qkv) + b * T * ld + h * a.hs;
  const In* dy = static_cast<const In*>(a.dout) + b * T * a.C + h * a.hs;
  if constexpr (!kFromAtt) load_tile<D, kBk>(Ks, q + a.C, ld, k0, T, a.hs);
  load_tile<D, kBk>(Vs, q + 2 * a.C, ld, k0, T, a.hs);

  float dk[kRk][kE], dv[kRk][kE];
#pragma unroll
  for (int i = 0; i < kRk; ++i)
#pragma unroll
    for (int e = 0; e < kE; ++e) dk[i][e] = dv[i][e] = 0.0f;

  for (int64_t q0 = k0 / kBq * kBq; q0 < T; q0 += kBq) {
    int64_t r[kRq], lo[kRq];
    bool any = false;
#pragma unroll
    for (int i = 0; i < kRq; ++i) {
      r[i] = q0 + ty + 16 * i;
      lo[i] = a.first != nullptr && r[i] < T ? a.first[b * T + r[i]] : 0;
      any |= r[i] < T && attends_any(r[i], lo[i], k0, k0 + kBk);
    }
    if (!__syncthreads_or(any)) continue;
    load_tile<D, kBq>(Qs, q, ld, q0, T, a.hs);
    load_tile<D, kBq>(dYs, dy, a.C, q0, T, a.hs);
    float lse[kRq], dsum[kRq];
#pragma unroll
    for (int i = 0; i < kRq; ++i) {
      lse[i] = !kFromAtt && r[i] < T ? a.lse[bh * T + r[i]] : 0.0f;
      dsum[i] = r[i] < T ? a.dsum[bh * T + r[i]] : 0.0f;
    }
    __syncthreads();
    float p[kRq][kRk], dp[kRq][kRk];
    probabilities<D, kFromAtt>(p, Qs, Ks, r, lo, lse, k0, a, bh);
    dot_tile<D>(dp, dYs, Vs);
    store_p<kRound, kRq, kRk, Tl::kPld>(Ps, p);
    __syncthreads();
    acc_ptv<D, kRk, kBq, Tl::kPld>(dv, Ps, dYs);
#pragma unroll
    for (int i = 0; i < kRq; ++i)
#pragma unroll
      for (int j = 0; j < kRk; ++j) {
        const bool ok = r[i] < T && attends(r[i], k0 + tx + 16 * j, lo[i]);
        p[i][j] = ok ? softmax_grad(p[i][j], dp[i][j], dsum[i]) : 0.0f;
      }
    __syncthreads();
    store_p<kRound, kRq, kRk, Tl::kPld>(Ps, p);
    __syncthreads();
    acc_ptv<D, kRk, kBq, Tl::kPld>(dk, Ps, Qs);
  }

  Grad* g = static_cast<Grad*>(a.dqkv) + b * T * ld + h * a.hs;
#pragma unroll
  for (int i = 0; i < kRk; ++i) {
    const int64_t t = k0 + ty + 16 * i;
    if (t >= T) continue;
#pragma unroll
    for (int e = 0; e < kE; ++e) {
      const int d = tx + 16 * e;
      if (d >= a.hs) continue;
      put_grad(g, t * ld + a.C + d, a.scale * dk[i][e]);
      put_grad(g, t * ld + 2 * a.C + d, dv[i][e]);
    }
  }
}

// The backward (dq kernel, then dk/dv kernel) for checked sizes.
template <typename In, typename Grad, bool kFromAtt, bool kRound>
Status run_backward(cudaStream_t stream, Grad* dqkv, const In* dout, const In* qkv,
                    const float* att, const float* lse, const int32_t* first, int64_t B, int64_t T,
                    int64_t C, int64_t NH) {
  const int64_t hs = C / NH;
  float* dsum = nullptr;
  ZT_CUDA_RETURN_IF_ERROR(cudaMallocAsync(reinterpret_cast<void**>(&dsum),
                                          static_cast<size_t>(B * NH * T) * sizeof(float), stream));
  Status s = by_head_size(hs, [&](auto d) -> Status {
    constexpr int D = decltype(d)::value;
    using Tl = Tiles<D>;
    const int64_t q_tiles = (T + Tl::kBq - 1) / Tl::kBq, k_tiles = (T + Tl::kBk - 1) / Tl::kBk;
    const BackwardArgs args{dqkv,
                            dout,
                            qkv,
                            att,
                            lse,
                            first,
                            dsum,
                            T,
                            C,
                            B * NH,
                            static_cast<int>(NH),
                            static_cast<int>(hs),
                            static_cast<int>(q_tiles),
                            1.0f / std::sqrt(static_cast<float>(hs))};
    ZT_RETURN_IF_ERROR(launch(dq_kernel<D, In, Grad, kFromAtt, kRound>, q_tiles * B * NH,
                              Tl::kBackwardBytes, stream, "attention backward dq", args));
    return launch(dkv_kernel<D, In, Grad, kFromAtt, kRound>, k_tiles * B * NH, Tl::kBackwardBytes,
                  stream, "attention backward dk dv", args);
  });
  const Status freed = cuda_status(cudaFreeAsync(dsum, stream), "cudaFreeAsync(attention dsum)");
  return s.ok() ? freed : s;
}

}  // namespace zerotrain::device::cuda::kernels::attention_tiles
