// Causal self-attention kernels (see attention.h). q, k, v (and dy) are
// copied head-major [B,NH,T,hs] into scratch, then each head runs its
// GEMMs and softmax on one thread. The upper triangle of q·kᵀ is computed
// and then masked: simpler than blocked causal GEMMs, at most 2x the
// attention GEMM FLOPs, which are small next to the projections.
#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/vec_math.h"

namespace zerotrain::kernels::cpu {
namespace {

struct Dims {
  int64_t B, T, C, NH, hs;
  int64_t btc() const { return B * T * C; }
};

// dst[b,h,t,:] = src[b,t, offset + h·hs + :], src rows `stride` apart.
void gather_heads(float* dst, const float* src, int64_t stride, int64_t offset, const Dims& d) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < d.B; ++b) {
    for (int64_t t = 0; t < d.T; ++t) {
      const float* row = src + (b * d.T + t) * stride + offset;
      for (int64_t h = 0; h < d.NH; ++h) {
        std::copy(row + h * d.hs, row + (h + 1) * d.hs, dst + ((b * d.NH + h) * d.T + t) * d.hs);
      }
    }
  }
}

// q, k, v head-major from the fused qkv [B,T,3C].
void split_heads(float* q, float* k, float* v, const float* qkv, const Dims& d) {
  gather_heads(q, qkv, 3 * d.C, 0, d);
  gather_heads(k, qkv, 3 * d.C, d.C, d);
  gather_heads(v, qkv, 3 * d.C, 2 * d.C, d);
}

// out[b,t, offset + h·hs + :] (+)= src[b,h,t,:] with row stride `stride`.
void merge_heads(float* out, int64_t stride, int64_t offset, const float* src, const Dims& d,
                 bool accumulate) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < d.B; ++b) {
    for (int64_t t = 0; t < d.T; ++t) {
      float* dst = out + (b * d.T + t) * stride + offset;
      for (int64_t h = 0; h < d.NH; ++h) {
        const float* s = src + ((b * d.NH + h) * d.T + t) * d.hs;
        float* o = dst + h * d.hs;
        for (int64_t i = 0; i < d.hs; ++i) o[i] = accumulate ? o[i] + s[i] : s[i];
      }
    }
  }
}

// One head's [T,T] block, row t: softmax over t2 <= t, zero for t2 > t.
ZT_SIMD_CLONES void causal_softmax_block(float* att, int64_t T) {
  for (int64_t t = 0; t < T; ++t) {
    float* row = att + t * T;
    float maxv = row[0];
#pragma omp simd reduction(max : maxv)
    for (int64_t j = 0; j <= t; ++j) maxv = std::max(maxv, row[j]);
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j <= t; ++j) {
      row[j] = fast_exp(row[j] - maxv);
      sum += row[j];
    }
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j <= t; ++j) row[j] *= inv;
    for (int64_t j = t + 1; j < T; ++j) row[j] = 0.0f;
  }
}

// In place on one head's block: datt -> dpreatt = att ⊙ (datt - Σ_j att·datt).
ZT_SIMD_CLONES void causal_softmax_backward_block(float* datt, const float* att, int64_t T) {
  for (int64_t t = 0; t < T; ++t) {
    float* g = datt + t * T;
    const float* a = att + t * T;
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t j = 0; j <= t; ++j) dot += a[j] * g[j];
    for (int64_t j = 0; j <= t; ++j) g[j] = a[j] * (g[j] - dot);
    for (int64_t j = t + 1; j < T; ++j) g[j] = 0.0f;
  }
}

// Runs fn(bh) for every head on the OpenMP threads, each head's GEMMs
// single-threaded: for GPT-sized heads this is ~4x faster than oneDNN's
// own batched matmul, and each head's [T,T] block stays in cache between
// its GEMMs and softmax. Returns the first failure.
template <typename Fn>
Status for_each_head(int64_t BH, Fn&& fn) {
  Status first;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t bh = 0; bh < BH; ++bh) {
    Status s = fn(bh);
    if (!s.ok()) {
#pragma omp critical(zt_attention_status)
      if (first.ok()) first = s;
    }
  }
  return first;
}

StatusOr<Dims> make_dims(int64_t B, int64_t T, int64_t C, int64_t NH) {
  if (NH <= 0 || C % NH != 0) {
    return invalid_argument(detail::concat("attention: C=", C, " is not a multiple of NH=", NH));
  }
  return Dims{B, T, C, NH, C / NH};
}

}  // namespace

int64_t attention_forward_scratch_floats(int64_t B, int64_t T, int64_t C) { return 3 * B * T * C; }

int64_t attention_backward_scratch_floats(int64_t B, int64_t T, int64_t C, int64_t NH) {
  return 4 * B * T * C + B * NH * T * T;
}

Status attention_forward(float* out, float* att, const float* qkv, float* scratch, int64_t B,
                         int64_t T, int64_t C, int64_t NH) {
  ZT_ASSIGN_OR_RETURN(Dims d, make_dims(B, T, C, NH));
  if (d.btc() == 0) return ok_status();
  float* q = scratch;
  float* k = q + d.btc();
  float* v = k + d.btc();
  split_heads(q, k, v, qkv, d);
  const int64_t hs = d.hs, TT = T * T, Ths = T * hs;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const MatmulDesc qk{.m = T, .n = T, .k = hs, .trans_b = true, .alpha = scale};
  const MatmulDesc av{.m = T, .n = hs, .k = T};
  ZT_RETURN_IF_ERROR(for_each_head(B * NH, [&](int64_t bh) -> Status {
    float* a = att + bh * TT;
    // att = softmax_causal(scale · q·kᵀ); y = att·v into q's slot (q is consumed).
    ZT_RETURN_IF_ERROR(matmul(qk, q + bh * Ths, k + bh * Ths, nullptr, a));
    causal_softmax_block(a, T);
    return matmul(av, a, v + bh * Ths, nullptr, q + bh * Ths);
  }));
  merge_heads(out, C, 0, q, d, /*accumulate=*/false);
  return ok_status();
}

Status attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att,
                          float* scratch, int64_t B, int64_t T, int64_t C, int64_t NH) {
  ZT_ASSIGN_OR_RETURN(Dims d, make_dims(B, T, C, NH));
  if (d.btc() == 0) return ok_status();
  const int64_t BH = B * NH, hs = d.hs;
  float* q = scratch;
  float* k = q + d.btc();
  float* v = k + d.btc();
  float* dy = v + d.btc();
  float* datt = dy + d.btc();
  split_heads(q, k, v, qkv, d);
  gather_heads(dy, dout, C, 0, d);
  const int64_t TT = T * T, Ths = T * hs;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const MatmulDesc dy_vt{.m = T, .n = T, .k = hs, .trans_b = true};
  const MatmulDesc att_t_dy{.m = T, .n = hs, .k = T, .trans_a = true};
  const MatmulDesc dpre_k{.m = T, .n = hs, .k = T, .alpha = scale};
  const MatmulDesc dpre_t_q{.m = T, .n = hs, .k = T, .trans_a = true, .alpha = scale};
  ZT_RETURN_IF_ERROR(for_each_head(BH, [&](int64_t bh) -> Status {
    const int64_t o = bh * Ths;
    const float* a = att + bh * TT;
    float* g = datt + bh * TT;
    // datt = dy·vᵀ, after which v's slot is free and takes dv = attᵀ·dy.
    ZT_RETURN_IF_ERROR(matmul(dy_vt, dy + o, v + o, nullptr, g));
    ZT_RETURN_IF_ERROR(matmul(att_t_dy, a, dy + o, nullptr, v + o));
    causal_softmax_backward_block(g, a, T);
    // dq = scale·dpreatt·k into dy's slot (dy is consumed), then
    // dk = scale·dpreattᵀ·q into k's slot (k is consumed).
    ZT_RETURN_IF_ERROR(matmul(dpre_k, g, k + o, nullptr, dy + o));
    return matmul(dpre_t_q, g, q + o, nullptr, k + o);
  }));
  merge_heads(dqkv, 3 * C, 0, dy, d, /*accumulate=*/true);
  merge_heads(dqkv, 3 * C, C, k, d, /*accumulate=*/true);
  merge_heads(dqkv, 3 * C, 2 * C, v, d, /*accumulate=*/true);
  return ok_status();
}

}  // namespace zerotrain::kernels::cpu
