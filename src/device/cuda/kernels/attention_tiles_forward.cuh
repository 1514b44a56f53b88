// Internal to kernels/: the tiled attention forward (see attention_tiles.cuh
// for the scheme) and its launcher, for the fp32 and bf16 forms.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "device/cuda/kernels/attention_tiles.cuh"

namespace zerotrain::device::cuda::kernels::attention_tiles {

// The forward of one (b, h, query tile); In/Out are float or BFloat16.
// kTwoPass: normalise p before p·v (att kept, bf16); kRound: p rounded to
// bf16 for p·v.
template <int D, typename In, typename Out, bool kTwoPass, bool kRound>
__global__ void __launch_bounds__(kThreads, 2) forward_kernel(ForwardArgs a) {
  using Tl = Tiles<D>;
  constexpr int kRq = Tl::kRq, kRk = Tl::kRk, kE = Tl::kE, kBq = Tl::kBq, kBk = Tl::kBk;
  extern __shared__ float smem[];
  float* Qs = smem;
  float* Ks = Qs + Tl::kQ;
  float* Vs = Ks + Tl::kK;
  float* Ps = Vs + Tl::kK;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  // The last query tiles meet the most keys: they start first.
  const int64_t bh = blockIdx.x % a.BH, b = bh / a.NH, h = bh % a.NH;
  const int64_t q0 = (a.ntiles - 1 - static_cast<int64_t>(blockIdx.x / a.BH)) * kBq;
  const int64_t T = a.T, ld = 3 * a.C;
  const In* q = static_cast<const In*>(a.qkv) + b * T * ld + h * a.hs;
  load_tile<D, kBq>(Qs, q, ld, q0, T, a.hs);

  int64_t r[kRq], lo[kRq];
  float m[kRq], l[kRq], o[kRq][kE];
#pragma unroll
  for (int i = 0; i < kRq; ++i) {
    r[i] = q0 + ty + 16 * i;
    lo[i] = a.first != nullptr && r[i] < T ? a.first[b * T + r[i]] : 0;
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int e = 0; e < kE; ++e) o[i][e] = 0.0f;
  }
  // Key tiles up to the tile's last row (causal).
  const int64_t key_tiles = ((q0 + kBq < T ? q0 + kBq : T) - 1 + kBk) / kBk;

  for (int64_t kt = 0; kt < key_tiles; ++kt) {
    const int64_t k0 = kt * kBk;
    bool any = false;
#pragma unroll
    for (int i = 0; i < kRq; ++i) any |= r[i] < T && attends_any(r[i], lo[i], k0, k0 + kBk);
    // Also the barrier before Ks, Vs, Ps are overwritten.
    if (!__syncthreads_or(any)) continue;
    load_tile<D, kBk>(Ks, q + a.C, ld, k0, T, a.hs);
    if constexpr (!kTwoPass) load_tile<D, kBk>(Vs, q + 2 * a.C, ld, k0, T, a.hs);
    __syncthreads();
    float s[kRq][kRk];
    masked_scores<D>(s, Qs, Ks, r, lo, k0, T, a.scale);
#pragma unroll
    for (int i = 0; i < kRq; ++i) {
      float mt = -INFINITY;
#pragma unroll
      for (int j = 0; j < kRk; ++j) mt = fmaxf(mt, s[i][j]);
      const float m_new = fmaxf(m[i], max16(mt));
      const float alpha = softmax_rescale(m[i], m_new);
      float ps = 0.0f;
#pragma unroll
      for (int j = 0; j < kRk; ++j) {
        s[i][j] = s[i][j] == -INFINITY ? 0.0f : expf(s[i][j] - m_new);
        ps += s[i][j];
      }
      l[i] = l[i] * alpha + sum16(ps);
      m[i] = m_new;
      if constexpr (!kTwoPass) {
#pragma unroll
        for (int e = 0; e < kE; ++e) o[i][e] *= alpha;
      }
    }
    if constexpr (!kTwoPass) {
      store_p<false, kRq, kRk, Tl::kPld>(Ps, s);
      __syncthreads();
      acc_pv<D, kRq, kBk, Tl::kPld>(o, Ps, Vs);
    }
  }

  if constexpr (kTwoPass) {
    // p = exp(s - m)·(1/l), as causal_softmax_rows normalises.
    float inv[kRq];
#pragma unroll
    for (int i = 0; i < kRq; ++i) inv[i] = 1.0f / l[i];
    for (int64_t kt = 0; kt < key_tiles; ++kt) {
      const int64_t k0 = kt * kBk;
      bool any = false;
#pragma unroll
      for (int i = 0; i < kRq; ++i) any |= r[i] < T && attends_any(r[i], lo[i], k0, k0 + kBk);
      if (!__syncthreads_or(any)) continue;
      load_tile<D, kBk>(Ks, q + a.C, ld, k0, T, a.hs);
      load_tile<D, kBk>(Vs, q + 2 * a.C, ld, k0, T, a.hs);
      __syncthreads();
      float s[kRq][kRk];
      masked_scores<D>(s, Qs, Ks, r, lo, k0, T, a.scale);
#pragma unroll
      for (int i = 0; i < kRq; ++i)
#pragma unroll
        for (int j = 0; j < kRk; ++j) {
          s[i][j] = s[i][j] == -INFINITY ? 0.0f : expf(s[i][j] - m[i]) * inv[i];
          const int64_t c = k0 + tx + 16 * j;
          if (a.att != nullptr && r[i] < T && c < T) a.att[(bh * T + r[i]) * T + c] = s[i][j];
        }
      store_p<kRound, kRq, kRk, Tl::kPld>(Ps, s);
      __syncthreads();
      acc_pv<D, kRq, kBk, Tl::kPld>(o, Ps, Vs);
    }
    // att past the last key tile: the causal zeros (the att forms take no
    // `first`, so no tile before it was skipped).
    if (a.att != nullptr) {
      const int64_t c0 = key_tiles * kBk, width = T > c0 ? T - c0 : 0;
      for (int64_t idx = threadIdx.x; idx < kBq * width; idx += kThreads) {
        const int64_t row = q0 + idx / width;
        if (row < T) a.att[(bh * T + row) * T + c0 + idx % width] = 0.0f;
      }
    }
  }

  Out* y = static_cast<Out*>(a.out) + b * T * a.C + h * a.hs;
#pragma unroll
  for (int i = 0; i < kRq; ++i) {
    if (r[i] >= T) continue;
#pragma unroll
    for (int e = 0; e < kE; ++e) {
      const int d = tx + 16 * e;
      if (d < a.hs) put(y, r[i] * a.C + d, kTwoPass ? o[i][e] : o[i][e] / l[i]);
    }
    if (a.lse != nullptr && tx == 0) a.lse[bh * T + r[i]] = softmax_lse(m[i], l[i]);
  }
}

// The forward for T, C, NH already checked (T, C > 0).
template <typename In, typename Out, bool kTwoPass, bool kRound>
Status run_forward(cudaStream_t stream, Out* out, float* att, float* lse, const In* qkv,
                   const int32_t* first, int64_t B, int64_t T, int64_t C, int64_t NH) {
  const int64_t hs = C / NH;
  return by_head_size(hs, [&](auto d) -> Status {
    constexpr int D = decltype(d)::value;
    using Tl = Tiles<D>;
    const int64_t tiles = (T + Tl::kBq - 1) / Tl::kBq;
    const ForwardArgs args{out,
                           att,
                           lse,
                           qkv,
                           first,
                           T,
                           C,
                           B * NH,
                           static_cast<int>(NH),
                           static_cast<int>(hs),
                           static_cast<int>(tiles),
                           1.0f / std::sqrt(static_cast<float>(hs))};
    return launch(forward_kernel<D, In, Out, kTwoPass, kRound>, tiles * B * NH, Tl::kForwardBytes,
                  stream, "attention forward", args);
  });
}

}  // namespace zerotrain::device::cuda::kernels::attention_tiles
