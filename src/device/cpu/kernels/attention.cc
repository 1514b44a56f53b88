// Causal self-attention kernels in fp32 (see attention.h; the bf16 forms
// are in attention_bf16.cc). Each head runs its GEMMs (on strided views of
// qkv, dout and dqkv) and softmax on one thread, by blocks of query rows
// that only meet the keys they may see.
#include "device/cpu/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "device/cpu/kernels/attention_parts.h"
#include "device/cpu/kernels/matmul.h"
#include "device/cpu/kernels/vec_math.h"

namespace zerotrain::device::cpu {
namespace attention_detail {

// Indices below are relative to the row's first held key c0.
ZT_SIMD_CLONES void causal_softmax_rows(float* att, int64_t ld, int64_t t0, int64_t rows,
                                        int64_t width, float* lse, const int32_t* first,
                                        int64_t c0) {
  width -= c0;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t t = t0 + i - c0, lo = (first ? first[i] : 0) - c0;
    float* row = att + i * ld;
    for (int64_t j = 0; j < lo; ++j) row[j] = 0.0f;
    float maxv = row[lo];
#pragma omp simd reduction(max : maxv)
    for (int64_t j = lo; j <= t; ++j) maxv = row[j] > maxv ? row[j] : maxv;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = lo; j <= t; ++j) {
      row[j] = fast_exp(row[j] - maxv);
      sum += row[j];
    }
    const float inv = 1.0f / sum;
#pragma omp simd
    for (int64_t j = lo; j <= t; ++j) row[j] *= inv;
    for (int64_t j = t + 1; j < width; ++j) row[j] = 0.0f;
    if (lse) lse[i] = maxv + std::log(sum);
  }
}

ZT_SIMD_CLONES void causal_exp_rows(float* p, int64_t ld, int64_t t0, int64_t rows, int64_t width,
                                    const float* lse, const int32_t* first, int64_t c0) {
  width -= c0;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t t = t0 + i - c0, lo = (first ? first[i] : 0) - c0;
    float* row = p + i * ld;
    const float l = lse[i];
    for (int64_t j = 0; j < lo; ++j) row[j] = 0.0f;
#pragma omp simd
    for (int64_t j = lo; j <= t; ++j) row[j] = fast_exp(row[j] - l);
    for (int64_t j = t + 1; j < width; ++j) row[j] = 0.0f;
  }
}

ZT_SIMD_CLONES void causal_softmax_backward_rows(float* datt, int64_t ldg, const float* att,
                                                 int64_t lda, int64_t t0, int64_t rows,
                                                 int64_t width, int64_t c0) {
  width -= c0;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t t = t0 + i - c0;
    float* g = datt + i * ldg;
    const float* a = att + i * lda;
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t j = 0; j <= t; ++j) dot += a[j] * g[j];
#pragma omp simd
    for (int64_t j = 0; j <= t; ++j) g[j] = a[j] * (g[j] - dot);
    for (int64_t j = t + 1; j < width; ++j) g[j] = 0.0f;
  }
}

}  // namespace attention_detail

namespace {

using namespace attention_detail;

// A head's q, k, v lie in qkv with rows 3C apart, k at q + C and v at q + 2C.
using Dims = HeadDims;

// C (+)= alpha · op(A) · op(B) with the given leading dimensions.
MatmulDesc gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, float beta,
                int64_t lda, int64_t ldb, int64_t ldc) {
  return MatmulDesc{.m = m,
                    .n = n,
                    .k = k,
                    .trans_a = ta,
                    .trans_b = tb,
                    .alpha = alpha,
                    .beta = beta,
                    .lda = lda,
                    .ldb = ldb,
                    .ldc = ldc};
}

// A per-thread work area of at least `floats` floats, reused across calls.
float* thread_work(int64_t floats) {
  thread_local std::vector<float> work;
  if (work.size() < static_cast<size_t>(floats)) work.resize(floats);
  return work.data();
}

// s[rows, cols - c0] (ld T) = scale · q[r0 .. r0+rows) · k[c0 .. cols)ᵀ for
// one head, cols = r0 + rows.
Status block_scores(float* s, const float* q, int64_t r0, int64_t rows, int64_t c0,
                    const Dims& d) {
  const int64_t ld = 3 * d.C;
  return matmul(gemm(false, true, rows, r0 + rows - c0, d.hs, d.scale, 0.0f, ld, ld, d.T),
                q + r0 * ld, q + d.C + c0 * ld, nullptr, s);
}

// One head by row blocks: att = softmax_causal(scale·q·kᵀ), y = att·v.
// att rows go to `att` ([T,T], kept) or to the reused `work` block; lse
// ([T]) receives the per-row log-sum-exp when not null.
Status head_forward(float* y, float* att, float* lse, const float* q, float* work, const Dims& d,
                    const int32_t* first) {
  const int64_t T = d.T, C = d.C;
  for (int64_t r0 = 0; r0 < T; r0 += kRowBlock) {
    const int64_t rows = std::min(kRowBlock, T - r0), cols = r0 + rows;
    // A kept att holds whole rows; only the recomputing path skips keys.
    const int64_t c0 = att ? 0 : block_first_key(first, r0, rows);
    float* a = att ? att + r0 * T : work;
    ZT_RETURN_IF_ERROR(block_scores(a, q, r0, rows, c0, d));
    causal_softmax_rows(a, T, r0, rows, att ? T : cols, lse ? lse + r0 : nullptr,
                        first ? first + r0 : nullptr, c0);
    ZT_RETURN_IF_ERROR(matmul(gemm(false, false, rows, d.hs, cols - c0, 1.0f, 0.0f, T, 3 * C, C),
                              a, q + 2 * C + c0 * 3 * C, nullptr, y + r0 * C));
  }
  return ok_status();
}

// One head's backward by row blocks. dq, dk, dv (+=) are column blocks of
// dqkv (ld 3C), as q, k, v are of qkv. att rows come from the kept
// `att` or, when it is null, are recomputed from lse into work_p; work_g
// holds datt.
Status head_backward(float* dq, const float* dy, const float* q, const float* att, const float* lse,
                     float* work_p, float* work_g, const Dims& d, const int32_t* first) {
  const int64_t T = d.T, C = d.C, hs = d.hs, ld = 3 * C;
  float* g = work_g;
  for (int64_t r0 = 0; r0 < T; r0 += kRowBlock) {
    const int64_t rows = std::min(kRowBlock, T - r0), cols = r0 + rows;
    const int64_t c0 = att ? 0 : block_first_key(first, r0, rows), n = cols - c0;
    const float* a = att ? att + r0 * T : work_p;
    if (!att) {
      ZT_RETURN_IF_ERROR(block_scores(work_p, q, r0, rows, c0, d));
      causal_exp_rows(work_p, T, r0, rows, cols, lse + r0, first ? first + r0 : nullptr, c0);
    }
    // Keys c0 .. cols-1 only: k, v and dk, dv from row c0.
    const float *k = q + C + c0 * ld, *v = q + 2 * C + c0 * ld;
    float *dk = dq + C + c0 * ld, *dv = dq + 2 * C + c0 * ld;
    // datt = dy·vᵀ; dv += attᵀ·dy; dpreatt = softmax'(datt).
    ZT_RETURN_IF_ERROR(
        matmul(gemm(false, true, rows, n, hs, 1.0f, 0.0f, C, ld, T), dy + r0 * C, v, nullptr, g));
    ZT_RETURN_IF_ERROR(
        matmul(gemm(true, false, n, hs, rows, 1.0f, 1.0f, T, C, ld), a, dy + r0 * C, nullptr, dv));
    causal_softmax_backward_rows(g, T, a, T, r0, rows, cols, c0);
    // dq += scale·dpreatt·k; dk += scale·dpreattᵀ·q.
    ZT_RETURN_IF_ERROR(matmul(gemm(false, false, rows, hs, n, d.scale, 1.0f, T, ld, ld), g, k,
                              nullptr, dq + r0 * ld));
    ZT_RETURN_IF_ERROR(matmul(gemm(true, false, n, hs, rows, d.scale, 1.0f, T, ld, ld), g,
                              q + r0 * ld, nullptr, dk));
  }
  return ok_status();
}

// Forward of every head; att or lse (one of them) is kept.
Status forward_all(float* out, float* att, float* lse, const float* qkv, int64_t B, int64_t T,
                   int64_t C, int64_t NH, const int32_t* first = nullptr) {
  ZT_ASSIGN_OR_RETURN(Dims d, make_head_dims(B, T, C, NH));
  if (B * T * C == 0) return ok_status();
  return for_each_head(B * NH, [&](int64_t bh) -> Status {
    const int64_t b = bh / NH, h = bh % NH;
    float* work = att ? nullptr : thread_work(kRowBlock * T);
    return head_forward(out + b * T * C + h * d.hs, att ? att + bh * T * T : nullptr,
                        lse ? lse + bh * T : nullptr, qkv + b * T * 3 * C + h * d.hs, work, d,
                        first ? first + b * T : nullptr);
  });
}

Status backward_all(float* dqkv, const float* dout, const float* qkv, const float* att,
                    const float* lse, int64_t B, int64_t T, int64_t C, int64_t NH,
                    const int32_t* first = nullptr) {
  ZT_ASSIGN_OR_RETURN(Dims d, make_head_dims(B, T, C, NH));
  if (B * T * C == 0) return ok_status();
  return for_each_head(B * NH, [&](int64_t bh) -> Status {
    const int64_t b = bh / NH, h = bh % NH, off = b * T * 3 * C + h * d.hs;
    float* work = thread_work(2 * kRowBlock * T);
    return head_backward(dqkv + off, dout + b * T * C + h * d.hs, qkv + off,
                         att ? att + bh * T * T : nullptr, lse ? lse + bh * T : nullptr, work,
                         work + kRowBlock * T, d, first ? first + b * T : nullptr);
  });
}

}  // namespace

Status attention_forward(float* out, float* att, const float* qkv, int64_t B, int64_t T, int64_t C,
                         int64_t NH) {
  return forward_all(out, att, nullptr, qkv, B, T, C, NH);
}

Status attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att,
                          int64_t B, int64_t T, int64_t C, int64_t NH) {
  return backward_all(dqkv, dout, qkv, att, nullptr, B, T, C, NH);
}

Status attention_forward_lse(float* out, float* lse, const float* qkv, int64_t B, int64_t T,
                             int64_t C, int64_t NH, const int32_t* first) {
  return forward_all(out, nullptr, lse, qkv, B, T, C, NH, first);
}

Status attention_backward_lse(float* dqkv, const float* dout, const float* qkv, const float* lse,
                              int64_t B, int64_t T, int64_t C, int64_t NH, const int32_t* first) {
  return backward_all(dqkv, dout, qkv, nullptr, lse, B, T, C, NH, first);
}

}  // namespace zerotrain::device::cpu
