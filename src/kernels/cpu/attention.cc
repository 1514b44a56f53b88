// Causal self-attention kernels (see attention.h). The upper triangle of
// q·kᵀ is computed and then masked: simpler than blocked causal GEMMs and
// the GEMM is not the bottleneck at GPT-2 small's T. Scratch layout is
// head-major [B,NH,T,hs] blocks, so each product is one batched GEMM.
#include "kernels/cpu/attention.h"

#include <cmath>

#include "kernels/cpu/matmul.h"

namespace zerotrain::kernels::cpu {
namespace {

struct Dims {
  int64_t B, T, C, NH, hs;
  int64_t btc() const { return B * T * C; }
};

// dst[b,h,t,:] = qkv[b,t, part·C + h·hs + :] for the three parts at once.
void split_heads(float* q, float* k, float* v, const float* qkv, const Dims& d) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < d.B; ++b) {
    for (int64_t t = 0; t < d.T; ++t) {
      const float* src = qkv + (b * d.T + t) * 3 * d.C;
      for (int64_t h = 0; h < d.NH; ++h) {
        const int64_t dst = ((b * d.NH + h) * d.T + t) * d.hs;
        for (int64_t i = 0; i < d.hs; ++i) {
          q[dst + i] = src[h * d.hs + i];
          k[dst + i] = src[d.C + h * d.hs + i];
          v[dst + i] = src[2 * d.C + h * d.hs + i];
        }
      }
    }
  }
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

// Row t of each [T,T] block: softmax over t2 <= t, zero for t2 > t.
void causal_softmax(float* att, const Dims& d) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t bh = 0; bh < d.B * d.NH; ++bh) {
    for (int64_t t = 0; t < d.T; ++t) {
      float* row = att + (bh * d.T + t) * d.T;
      float maxv = row[0];
      for (int64_t j = 1; j <= t; ++j) maxv = std::fmax(maxv, row[j]);
      float sum = 0.0f;
      for (int64_t j = 0; j <= t; ++j) {
        row[j] = std::exp(row[j] - maxv);
        sum += row[j];
      }
      const float inv = 1.0f / sum;
      for (int64_t j = 0; j <= t; ++j) row[j] *= inv;
      for (int64_t j = t + 1; j < d.T; ++j) row[j] = 0.0f;
    }
  }
}

// In place: datt -> dpreatt = att ⊙ (datt - Σ_j att·datt) (softmax Jacobian).
void causal_softmax_backward(float* datt, const float* att, const Dims& d) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t bh = 0; bh < d.B * d.NH; ++bh) {
    for (int64_t t = 0; t < d.T; ++t) {
      float* g = datt + (bh * d.T + t) * d.T;
      const float* a = att + (bh * d.T + t) * d.T;
      float dot = 0.0f;
      for (int64_t j = 0; j <= t; ++j) dot += a[j] * g[j];
      for (int64_t j = 0; j <= t; ++j) g[j] = a[j] * (g[j] - dot);
      for (int64_t j = t + 1; j < d.T; ++j) g[j] = 0.0f;
    }
  }
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
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.hs));
  // att[bh] = scale · q[bh] · k[bh]ᵀ   ([T,hs]·[hs,T])
  ZT_RETURN_IF_ERROR(matmul(
      MatmulDesc{.m = T, .n = T, .k = d.hs, .trans_b = true, .alpha = scale, .batch = B * NH}, q, k,
      nullptr, att));
  causal_softmax(att, d);
  // y[bh] = att[bh] · v[bh] ([T,T]·[T,hs]) into q's slot (q is consumed).
  ZT_RETURN_IF_ERROR(
      matmul(MatmulDesc{.m = T, .n = d.hs, .k = T, .batch = B * NH}, att, v, nullptr, q));
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
  // dy[b,h,t,:] = dout[b,t,h·hs + :]: reuse split's layout via merge's inverse.
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t h = 0; h < NH; ++h) {
        const float* s = dout + (b * T + t) * C + h * hs;
        float* o = dy + ((b * NH + h) * T + t) * hs;
        for (int64_t i = 0; i < hs; ++i) o[i] = s[i];
      }
    }
  }
  // datt = dy · vᵀ; then v's slot is free and takes dv = attᵀ · dy.
  ZT_RETURN_IF_ERROR(matmul(MatmulDesc{.m = T, .n = T, .k = hs, .trans_b = true, .batch = BH}, dy,
                            v, nullptr, datt));
  ZT_RETURN_IF_ERROR(matmul(MatmulDesc{.m = T, .n = hs, .k = T, .trans_a = true, .batch = BH}, att,
                            dy, nullptr, v));
  merge_heads(dqkv, 3 * C, 2 * C, v, d, /*accumulate=*/true);
  causal_softmax_backward(datt, att, d);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  // dq = scale · dpreatt · k (into dy's slot); dk = scale · dpreattᵀ · q (into v's).
  ZT_RETURN_IF_ERROR(matmul(MatmulDesc{.m = T, .n = hs, .k = T, .alpha = scale, .batch = BH}, datt,
                            k, nullptr, dy));
  ZT_RETURN_IF_ERROR(
      matmul(MatmulDesc{.m = T, .n = hs, .k = T, .trans_a = true, .alpha = scale, .batch = BH},
             datt, q, nullptr, v));
  merge_heads(dqkv, 3 * C, 0, dy, d, /*accumulate=*/true);
  merge_heads(dqkv, 3 * C, C, v, d, /*accumulate=*/true);
  return ok_status();
}

}  // namespace zerotrain::kernels::cpu
