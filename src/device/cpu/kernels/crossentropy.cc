// Fused softmax + cross-entropy kernels (see crossentropy.h). exp comes
// from fast_exp so the V-long row loops vectorise (AVX-512 where present).
#include "device/cpu/kernels/crossentropy.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "device/cpu/kernels/vec_math.h"

namespace zerotrain::device::cpu {
namespace {

Status check_targets(const int32_t* targets, int64_t B, int64_t T, int64_t V, int64_t Vp) {
  if (Vp < V) {
    return invalid_argument(detail::concat("crossentropy: padded vocab Vp=", Vp, " < V=", V));
  }
  for (int64_t i = 0; i < B * T; ++i) {
    if (targets[i] >= V) {
      return invalid_argument(detail::concat("crossentropy: target ", targets[i], " at (b=", i / T,
                                             ", t=", i % T, ") is outside [0, V=", V, ")"));
    }
  }
  return ok_status();
}

// log Σ_v exp(row[v]) over v < V, shifted by the row max for range safety.
ZT_SIMD_CLONES float row_logsumexp(const float* row, int64_t V) {
  float maxv = -INFINITY;
#pragma omp simd reduction(max : maxv)
  for (int64_t v = 0; v < V; ++v) maxv = row[v] > maxv ? row[v] : maxv;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t v = 0; v < V; ++v) sum += fast_exp(row[v] - maxv);
  return maxv + std::log(sum);
}

ZT_SIMD_CLONES void row_backward(float* drow, const float* row, float lse, int32_t target,
                                 float dloss, int64_t V, int64_t Vp) {
  if (target < 0) {
    for (int64_t v = 0; v < Vp; ++v) drow[v] = 0.0f;
    return;
  }
  // Read-then-write per element, so drow == row is fine.
#pragma omp simd
  for (int64_t v = 0; v < V; ++v) drow[v] = dloss * fast_exp(row[v] - lse);
  drow[target] -= dloss;
  for (int64_t v = V; v < Vp; ++v) drow[v] = 0.0f;
}

}  // namespace

Status crossentropy_forward(float* losses, float* lse, const float* logits, const int32_t* targets,
                            int64_t B, int64_t T, int64_t V, int64_t Vp) {
  ZT_RETURN_IF_ERROR(check_targets(targets, B, T, V, Vp));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < B * T; ++i) {
    const float* row = logits + i * Vp;
    const float l = row_logsumexp(row, V);
    if (lse) lse[i] = l;
    losses[i] = targets[i] < 0 ? 0.0f : l - row[targets[i]];
  }
  return ok_status();
}

void crossentropy_backward(float* dlogits, const float* logits, const float* lse,
                           const int32_t* targets, float dloss, int64_t B, int64_t T, int64_t V,
                           int64_t Vp) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < B * T; ++i) {
    row_backward(dlogits + i * Vp, logits + i * Vp, lse[i], targets[i], dloss, V, Vp);
  }
}

Status crossentropy_forward_backward(float* losses, float* dlogits, const float* logits,
                                     const int32_t* targets, float dloss, int64_t B, int64_t T,
                                     int64_t V, int64_t Vp) {
  ZT_RETURN_IF_ERROR(check_targets(targets, B, T, V, Vp));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < B * T; ++i) {
    const float* row = logits + i * Vp;
    const float l = row_logsumexp(row, V);
    const int32_t tgt = targets[i];
    losses[i] = tgt < 0 ? 0.0f : l - row[tgt];
    row_backward(dlogits + i * Vp, row, l, tgt, dloss, V, Vp);
  }
  return ok_status();
}

Status crossentropy_forward_backward_bf16(float* losses, BFloat16* dlogits, const float* logits,
                                          const int32_t* targets, float dloss, int64_t B, int64_t T,
                                          int64_t V, int64_t Vp) {
  ZT_RETURN_IF_ERROR(check_targets(targets, B, T, V, Vp));
#pragma omp parallel
  {
    // The row's fp32 dlogits stay in this (L1/L2-sized) buffer until
    // rounded: the fp32 [rows, Vp] array is never written.
    std::vector<float> drow(static_cast<size_t>(Vp));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < B * T; ++i) {
      const float* row = logits + i * Vp;
      const float l = row_logsumexp(row, V);
      const int32_t tgt = targets[i];
      losses[i] = tgt < 0 ? 0.0f : l - row[tgt];
      row_backward(drow.data(), row, l, tgt, dloss, V, Vp);
      bf16_from_float_array(dlogits + i * Vp, drow.data(), Vp);
    }
  }
  return ok_status();
}

}  // namespace zerotrain::device::cpu
