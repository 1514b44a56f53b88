// The attention kernels' per-element math (kernels/attention*.cu), shared
// with the CPU tests as element_math.h is: the causal (and packed-document)
// mask, the online softmax's rescale, log-sum-exp, softmax's backward and
// the head-size bucket the tiled kernels are compiled for. __host__
// __device__ under nvcc, plain inline under g++.
//
//   if (attends(r, c, lo)) p = expf(s - m);
//   l = l * softmax_rescale(m, m_new) + p_sum;
//
// Thread-safety: pure functions on values.
#pragma once

#include <cmath>
#include <cstdint>

#include "device/cuda/element_math.h"

namespace zerotrain::device::cuda {

// Query r sees key c when lo <= c <= r (lo: its first key, 0 unless
// packed documents restart it; the CPU's causal_softmax_rows' range).
ZT_HD bool attends(int64_t r, int64_t c, int64_t lo) { return lo <= c && c <= r; }

// Whether query r (first key lo) sees any key of [c0, c1): a tile that no
// row meets is skipped whole.
ZT_HD bool attends_any(int64_t r, int64_t lo, int64_t c0, int64_t c1) {
  const int64_t a = lo > c0 ? lo : c0, b = r < c1 - 1 ? r : c1 - 1;
  return a <= b;
}

// Online softmax: the factor taking sums kept under the running max m_old
// to the new max m_new >= m_old. 0 while nothing was kept (m_old = -inf),
// where exp(-inf - -inf) would be NaN.
ZT_HD float softmax_rescale(float m_old, float m_new) {
  return m_old == -INFINITY ? 0.0f : expf(m_old - m_new);
}

// log Σ exp(s) from the max m and Σ exp(s - m) (causal_softmax_rows' lse).
ZT_HD float softmax_lse(float m, float l) { return m + logf(l); }

// Softmax's backward for one entry: d preatt = p · (dp - Σ_j p_j·dp_j).
ZT_HD float softmax_grad(float p, float dp, float dot) { return p * (dp - dot); }

// The head size the tiled kernels are compiled for that holds hs (rows
// zero-padded to it), or 0 when hs is past the largest (256).
constexpr int attention_head_bucket(int64_t hs) {
  return hs <= 0 ? 0 : hs <= 32 ? 32 : hs <= 64 ? 64 : hs <= 128 ? 128 : hs <= 256 ? 256 : 0;
}

}  // namespace zerotrain::device::cuda
