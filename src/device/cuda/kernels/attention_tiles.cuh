// Internal to kernels/: the tiled causal attention kernels behind
// attention.cu (fp32) and attention_bf16.cu (bf16), flash-attention style on
// the CUDA cores in fp32: a block of 256 threads takes one (batch, head) and
// one tile of query rows (forward, dq) or of key rows (dk, dv), keeps its
// tiles in shared memory and never forms a [T,T] map (except to write the
// kept att). The CPU kernels (device/cpu/kernels/attention*.cc) are the
// oracle; their rounding points are reproduced, their summation order is
// not (fp32 sums in another order).
//
//   Forward, per query tile: pass 1 runs the online softmax (row max m,
//     Σ exp(s - m)) over the key tiles; the fp32 lse form accumulates
//     O = Σ p·v in the same pass, rescaled as m grows, and writes O / l.
//     The two-pass forms (att kept, bf16) then run pass 2: p = exp(s - m)·(1/l)
//     as causal_softmax_rows has it, written to att, (rounded to bf16 for
//     bf16), O += p·v.
//   Backward, two kernels, no float atomics: dq_kernel per query tile
//     computes Σ_j p·dp per row (pass 1, kept in a [B,NH,T] scratch; the
//     Ops backward gets no `out` to take dy·out from), then
//     dq = scale·Σ_j ds·k (pass 2); dkv_kernel per key tile loops over the
//     query tiles in order: dv += pᵀ·dy, dk += scale·dsᵀ·q. p is read from
//     att or recomputed as exp(s - lse).
//   A (query tile, key tile) pair that no row meets (causal, or before
//   every row's `first`) is skipped by the whole block.
//
// This header: the tiles, the arguments and the block-wide pieces (loads,
// tile products, the mask); the kernels and their launchers are in
// attention_tiles_forward.cuh and attention_tiles_backward.cuh.
//
// Thread layout: tx = thread % 16 picks columns, ty = thread / 16 rows; a
// thread holds rows ty + 16·i of a tile and columns tx + 16·j (keys) or
// tx + 16·e (head dims). Shared rows are D + 1 floats apart, so a column
// read by 16 threads hits 16 banks. Head sizes are compiled for D = 32, 64,
// 128, 256 (attention_head_bucket), rows zero-padded to D.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/half.h"
#include "core/status.h"
#include "device/cuda/attention_math.h"
#include "device/cuda/cuda_status.h"
#include "device/cuda/element_math.h"

namespace zerotrain::device::cuda::kernels::attention_tiles {

// 16 × 16 threads; every kernel is built for 2 blocks an SM (at most 128
// registers a thread, no spills at -O2 for sm_90).
constexpr int kThreads = 256;

// Tile sizes per head size D: query rows kBq, key rows kBk. Chosen so that
// a thread's accumulators stay at 32 floats or fewer per array and two
// blocks fit an SM's shared memory (except the backward at D = 256: one).
template <int D>
struct Tiles {
  static constexpr int kBq = D <= 128 ? 64 : 32;
  static constexpr int kBk = D <= 64 ? 64 : 32;
  static constexpr int kRq = kBq / 16, kRk = kBk / 16;  // rows (columns) per thread
  static constexpr int kE = D / 16;                     // head dims per thread
  static constexpr int kLd = D + 1;                     // shared row stride
  static constexpr int kPld = kBk + 1;                  // p / ds tile [kBq][kBk]
  static constexpr size_t kQ = static_cast<size_t>(kBq) * kLd;
  static constexpr size_t kK = static_cast<size_t>(kBk) * kLd;
  static constexpr size_t kP = static_cast<size_t>(kBq) * kPld;
  static constexpr size_t kForwardBytes = (kQ + 2 * kK + kP) * sizeof(float);
  static constexpr size_t kBackwardBytes = (2 * kQ + 2 * kK + kP) * sizeof(float);
};

struct ForwardArgs {
  void* out;             // [B,T,C] float or BFloat16
  float* att;            // [B,NH,T,T] or null
  float* lse;            // [B,NH,T] or null
  const void* qkv;       // [B,T,3C] float or BFloat16
  const int32_t* first;  // [B,T] or null
  int64_t T, C, BH;
  int NH, hs, ntiles;
  float scale;
};

struct BackwardArgs {
  void* dqkv;            // [B,T,3C] float (+=) or BFloat16 (=)
  const void* dout;      // [B,T,C]
  const void* qkv;       // [B,T,3C]
  const float* att;      // [B,NH,T,T] or null (then lse)
  const float* lse;      // [B,NH,T]
  const int32_t* first;  // [B,T] or null
  float* dsum;           // [B,NH,T] scratch: Σ_j p·dp per query
  int64_t T, C, BH;
  int NH, hs, ntiles;
  float scale;
};

__device__ __forceinline__ float load_elem(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load_elem(const BFloat16* p, int64_t i) {
  return bf16_to_float(p[i].bits);
}
// Forward outputs: overwritten (bf16 rounded once from the fp32 sum).
__device__ __forceinline__ void put(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void put(BFloat16* p, int64_t i, float v) {
  p[i].bits = bf16_round_bits(v);
}
// Gradients: the fp32 backward adds, the bf16 one overwrites (ops.h).
__device__ __forceinline__ void put_grad(float* p, int64_t i, float v) { p[i] += v; }
__device__ __forceinline__ void put_grad(BFloat16* p, int64_t i, float v) { put(p, i, v); }

__device__ __forceinline__ float max16(float v) {
#pragma unroll
  for (int o = 8; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Butterfly sum over a row's 16 lanes: every lane ends with the same bits
// (each step adds the same two values, commutatively).
__device__ __forceinline__ float sum16(float v) {
#pragma unroll
  for (int o = 8; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// dst [kRows][D+1] = rows r0.. of a head (src: its column 0, rows ld
// apart), as fp32; zero past T and past hs.
template <int D, int kRows, typename In>
__device__ void load_tile(float* dst, const In* src, int64_t ld, int64_t r0, int64_t T, int hs) {
  for (int idx = threadIdx.x; idx < kRows * D; idx += kThreads) {
    const int row = idx / D, d = idx % D;
    const int64_t t = r0 + row;
    dst[row * (D + 1) + d] = t < T && d < hs ? load_elem(src, t * ld + d) : 0.0f;
  }
}

// acc[i][j] = Σ_k A[ty+16i][k]·B[tx+16j][k] (A, B rows D+1 apart).
template <int D, int kRa, int kRb>
__device__ __forceinline__ void dot_tile(float (&acc)[kRa][kRb], const float* A, const float* B) {
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
#pragma unroll
  for (int i = 0; i < kRa; ++i)
#pragma unroll
    for (int j = 0; j < kRb; ++j) acc[i][j] = 0.0f;
#pragma unroll 4
  for (int k = 0; k < D; ++k) {
    float a[kRa], b[kRb];
#pragma unroll
    for (int i = 0; i < kRa; ++i) a[i] = A[(ty + 16 * i) * (D + 1) + k];
#pragma unroll
    for (int j = 0; j < kRb; ++j) b[j] = B[(tx + 16 * j) * (D + 1) + k];
#pragma unroll
    for (int i = 0; i < kRa; ++i)
#pragma unroll
      for (int j = 0; j < kRb; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
}

// acc[i][e] += Σ_c P[ty+16i][c]·V[c][tx+16e], c < kN (P rows kPld apart).
template <int D, int kRa, int kN, int kPld>
__device__ __forceinline__ void acc_pv(float (&acc)[kRa][D / 16], const float* P, const float* V) {
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
#pragma unroll 4
  for (int c = 0; c < kN; ++c) {
    float p[kRa], v[D / 16];
#pragma unroll
    for (int i = 0; i < kRa; ++i) p[i] = P[(ty + 16 * i) * kPld + c];
#pragma unroll
    for (int e = 0; e < D / 16; ++e) v[e] = V[c * (D + 1) + tx + 16 * e];
#pragma unroll
    for (int i = 0; i < kRa; ++i)
#pragma unroll
      for (int e = 0; e < D / 16; ++e) acc[i][e] = fmaf(p[i], v[e], acc[i][e]);
  }
}

// acc[i][e] += Σ_r P[r][ty+16i]·Y[r][tx+16e], r < kN: the transposed
// product of dkv_kernel (P rows are queries, its columns the key rows).
template <int D, int kRa, int kN, int kPld>
__device__ __forceinline__ void acc_ptv(float (&acc)[kRa][D / 16], const float* P, const float* Y) {
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
#pragma unroll 4
  for (int r = 0; r < kN; ++r) {
    float p[kRa], y[D / 16];
#pragma unroll
    for (int i = 0; i < kRa; ++i) p[i] = P[r * kPld + ty + 16 * i];
#pragma unroll
    for (int e = 0; e < D / 16; ++e) y[e] = Y[r * (D + 1) + tx + 16 * e];
#pragma unroll
    for (int i = 0; i < kRa; ++i)
#pragma unroll
      for (int e = 0; e < D / 16; ++e) acc[i][e] = fmaf(p[i], y[e], acc[i][e]);
  }
}

// P[ty+16i][tx+16j] = x[i][j], rounded through bf16 when kRound.
template <bool kRound, int kRa, int kRb, int kPld>
__device__ __forceinline__ void store_p(float* P, const float (&x)[kRa][kRb]) {
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
#pragma unroll
  for (int i = 0; i < kRa; ++i)
#pragma unroll
    for (int j = 0; j < kRb; ++j)
      P[(ty + 16 * i) * kPld + tx + 16 * j] = kRound ? round_bf16(x[i][j]) : x[i][j];
}

// Scaled scores of the thread's entries, -inf where masked (query r at or
// past T, or key c outside [lo, r]).
template <int D, int kRq, int kRk>
__device__ __forceinline__ void masked_scores(float (&s)[kRq][kRk], const float* Qs,
                                              const float* Ks, const int64_t (&r)[kRq],
                                              const int64_t (&lo)[kRq], int64_t k0, int64_t T,
                                              float scale) {
  const int tx = threadIdx.x % 16;
  dot_tile<D>(s, Qs, Ks);
#pragma unroll
  for (int i = 0; i < kRq; ++i)
#pragma unroll
    for (int j = 0; j < kRk; ++j) {
      const bool ok = r[i] < T && attends(r[i], k0 + tx + 16 * j, lo[i]);
      s[i][j] = ok ? s[i][j] * scale : -INFINITY;
    }
}

// Calls fn(std::integral_constant<int, D>) for hs's bucket.
template <typename Fn>
Status by_head_size(int64_t hs, Fn&& fn) {
  switch (attention_head_bucket(hs)) {
    case 32:
      return fn(std::integral_constant<int, 32>{});
    case 64:
      return fn(std::integral_constant<int, 64>{});
    case 128:
      return fn(std::integral_constant<int, 128>{});
    case 256:
      return fn(std::integral_constant<int, 256>{});
    default:
      return invalid_argument(
          detail::concat("attention: head size ", hs, " is past the CUDA kernels' 256"));
  }
}

// The CPU's make_head_dims check (C a multiple of NH), then the head size.
inline Status check_dims(int64_t C, int64_t NH) {
  if (NH <= 0 || C % NH != 0)
    return invalid_argument(detail::concat("attention: C=", C, " is not a multiple of NH=", NH));
  return ok_status();
}

template <typename Kernel>
Status launch(Kernel kernel, int64_t blocks, size_t smem, cudaStream_t stream, const char* name,
              const auto& args) {
  if (blocks > 0x7fffffff) return invalid_argument(detail::concat(name, ": too many tiles"));
  ZT_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(smem)));
  kernel<<<static_cast<unsigned>(blocks), kThreads, smem, stream>>>(args);
  return check_launch(name);
}

}  // namespace zerotrain::device::cuda::kernels::attention_tiles
