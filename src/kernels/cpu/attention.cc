// Causal self-attention kernels (see attention.h), fp32 and bf16 from one
// loop templated on the operands' element type E.
//
// Each head runs on one thread, by blocks of 64 query rows that only meet
// the keys they may see. It first copies its q, k, v (and in the backward
// its dout) out of the strided [B,T,3C] / [B,T,C] tensors into dense
// [T, hs] blocks, every block product reads and writes dense matrices, and
// the results are copied (out) or added (dqkv) into the tensors once per
// head. Dense operands are what oneDNN's fast kernels take: bf16 products
// run on AMX (3-7x its fp32 speed on these blocks) and fp32 ones on
// brgemm (10-25% faster than the gemm:jit it picks for strided views).
//
// With E = Bf16Bits this is autocast's attention: q, k, v as saved in bf16,
// att rounded to bf16 for att·v and attᵀ·dy, dout for its two products and
// d preatt for dq and dk, every product accumulating in fp32; softmax and
// its backward stay fp32 (attention_rows.h).
#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/attention_rows.h"
#include "kernels/cpu/matmul.h"

namespace zerotrain::kernels::cpu {
namespace {

using namespace attention_rows;

struct HeadDims {
  int64_t B, T, C, NH, hs;
  float scale;  // 1/sqrt(hs)
};

StatusOr<HeadDims> make_head_dims(int64_t B, int64_t T, int64_t C, int64_t NH) {
  if (NH <= 0 || C % NH != 0) {
    return invalid_argument(detail::concat("attention: C=", C, " is not a multiple of NH=", NH));
  }
  return HeadDims{B, T, C, NH, C / NH, 1.0f / std::sqrt(static_cast<float>(C / NH))};
}

// Query rows per block: block r0.. only needs keys 0 .. r0+rows-1, so the
// masked triangle is skipped (about 0.6x the full GEMM work at T=256).
constexpr int64_t kRowBlock = 64;

// Runs fn(bh) for every head on the OpenMP threads, each head's GEMMs
// single-threaded: for GPT-sized heads this is ~4x faster than oneDNN's
// own batched matmul, and a head's blocks stay in cache between its GEMMs
// and softmax. Returns the first failure.
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

// One thread's reused dense blocks.
template <typename E>
struct HeadBlocks {
  std::vector<E> q, k, v, dy;        // [T, hs]
  std::vector<E> p, ds;              // [rows, cols]: att and d preatt as operands
  std::vector<float> s, g;           // [rows, cols]: scores / att, datt
  std::vector<float> y, dq, dk, dv;  // forward: y [rows, hs]; backward: [T, hs]
};

template <typename E>
HeadBlocks<E>& head_blocks(const HeadDims& d, bool backward) {
  thread_local HeadBlocks<E> w;
  const auto th = static_cast<size_t>(d.T * d.hs), rt = static_cast<size_t>(kRowBlock * d.T);
  for (auto* v : {&w.q, &w.k, &w.v}) v->resize(th);
  w.p.resize(rt);
  w.s.resize(rt);
  if (backward) {
    w.dy.resize(th);
    if constexpr (!std::is_same_v<E, float>) w.ds.resize(rt);
    w.g.resize(rt);
    for (auto* v : {&w.dq, &w.dk, &w.dv}) v->resize(th);
  } else {
    w.y.resize(static_cast<size_t>(kRowBlock * d.hs));
  }
  return w;
}

// dst [rows, cols] dense = src rows (ld apart), rounded to bf16 when E is.
template <typename E>
void to_operand(E* dst, const float* src, int64_t ld, int64_t rows, int64_t cols) {
  if constexpr (std::is_same_v<E, float>) {
    for (int64_t i = 0; i < rows; ++i)
      std::memcpy(dst + i * cols, src + i * ld, static_cast<size_t>(cols) * sizeof(float));
  } else if (ld == cols) {
    bf16_from_float_array(dst, src, rows * cols);
  } else {
    for (int64_t i = 0; i < rows; ++i) bf16_from_float_array(dst + i * cols, src + i * ld, cols);
  }
}

// src [rows, cols] (rows ld apart) as a dense operand: fp32 dense rows are
// used where they lie, anything else goes through `scratch`.
template <typename E>
const E* operand(const float* src, int64_t ld, int64_t rows, int64_t cols, E* scratch) {
  if constexpr (std::is_same_v<E, float>) {
    if (ld == cols) return src;
  }
  to_operand(scratch, src, ld, rows, cols);
  return scratch;
}

// Head (b, h)'s q, k, v out of qkv [B,T,3C] into w's dense blocks.
template <typename E>
void copy_head(HeadBlocks<E>& w, const E* qkv, int64_t b, int64_t h, const HeadDims& d) {
  const int64_t T = d.T, C = d.C, hs = d.hs;
  const auto bytes = static_cast<size_t>(hs) * sizeof(E);
  for (int64_t t = 0; t < T; ++t) {
    const E* row = qkv + (b * T + t) * 3 * C + h * hs;
    std::memcpy(w.q.data() + t * hs, row, bytes);
    std::memcpy(w.k.data() + t * hs, row + C, bytes);
    std::memcpy(w.v.data() + t * hs, row + 2 * C, bytes);
  }
}

// Dense C = alpha · op(A) · op(B) (+ beta · C): A [m,k] or (ta) [k,m], B
// [k,n] or (tb) [n,k], C [m,n].
template <typename E>
Status dense(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, float beta,
             const E* a, const E* b, float* c) {
  const MatmulDesc d{.m = m, .n = n, .k = k, .trans_a = ta, .trans_b = tb, .alpha = alpha,
                     .beta = beta};
  if constexpr (std::is_same_v<E, float>) {
    return matmul(d, a, b, nullptr, c);
  } else {
    return matmul_bf16(d, a, b, nullptr, c);
  }
}

// s [rows, cols] = scale · q[r0 .. r0+rows) · k[0 .. cols)ᵀ.
template <typename E>
Status block_scores(HeadBlocks<E>& w, int64_t r0, int64_t rows, const HeadDims& d) {
  return dense<E>(false, true, rows, r0 + rows, d.hs, d.scale, 0.0f, w.q.data() + r0 * d.hs,
                  w.k.data(), w.s.data());
}

// One head: att = softmax_causal(scale·q·kᵀ) by row blocks, kept in `att`
// ([T,T]) or as lse ([T]); y (ld C) = att·v.
template <typename E>
Status head_forward(float* y, float* att, float* lse, HeadBlocks<E>& w, const HeadDims& d) {
  const int64_t T = d.T, C = d.C, hs = d.hs;
  for (int64_t r0 = 0; r0 < T; r0 += kRowBlock) {
    const int64_t rows = std::min(kRowBlock, T - r0), cols = r0 + rows;
    ZT_RETURN_IF_ERROR(block_scores(w, r0, rows, d));
    causal_softmax_rows(w.s.data(), cols, r0, rows, cols, lse ? lse + r0 : nullptr);
    if (att) {
      for (int64_t i = 0; i < rows; ++i) {
        float* row = att + (r0 + i) * T;
        std::memcpy(row, w.s.data() + i * cols, static_cast<size_t>(cols) * sizeof(float));
        std::fill(row + cols, row + T, 0.0f);
      }
    }
    const E* p = operand<E>(w.s.data(), cols, rows, cols, w.p.data());
    ZT_RETURN_IF_ERROR(dense<E>(false, false, rows, hs, cols, 1.0f, 0.0f, p, w.v.data(), w.y.data()));
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(y + (r0 + i) * C, w.y.data() + i * hs, static_cast<size_t>(hs) * sizeof(float));
    }
  }
  return ok_status();
}

// One head's backward into w.dq, w.dk, w.dv ([T, hs], overwritten). The
// row blocks run last to first: the last one meets every key, so its dk
// and dv products set the whole blocks and the others add to them.
template <typename E>
Status head_backward(const float* att, const float* lse, HeadBlocks<E>& w, const HeadDims& d) {
  const int64_t T = d.T, hs = d.hs;
  const int64_t last = (T - 1) / kRowBlock * kRowBlock;
  for (int64_t r0 = last; r0 >= 0; r0 -= kRowBlock) {
    const int64_t rows = std::min(kRowBlock, T - r0), cols = r0 + rows;
    const float beta = r0 == last ? 0.0f : 1.0f;
    const E* dy = w.dy.data() + r0 * hs;
    // att rows (fp32, for softmax's backward): kept, or recomputed from lse.
    const float* a = att ? att + r0 * T : w.s.data();
    const int64_t lda = att ? T : cols;
    if (!att) {
      ZT_RETURN_IF_ERROR(block_scores(w, r0, rows, d));
      causal_exp_rows(w.s.data(), cols, r0, rows, cols, lse + r0);
    }
    const E* p = operand<E>(a, lda, rows, cols, w.p.data());
    // datt = dy·vᵀ; dv (+)= attᵀ·dy; dpreatt = softmax'(datt).
    ZT_RETURN_IF_ERROR(dense<E>(false, true, rows, cols, hs, 1.0f, 0.0f, dy, w.v.data(), w.g.data()));
    ZT_RETURN_IF_ERROR(dense<E>(true, false, cols, hs, rows, 1.0f, beta, p, dy, w.dv.data()));
    causal_softmax_backward_rows(w.g.data(), cols, a, lda, r0, rows, cols);
    const E* ds = operand<E>(w.g.data(), cols, rows, cols, w.ds.data());
    // dq rows = scale·dpreatt·k; dk (+)= scale·dpreattᵀ·q.
    ZT_RETURN_IF_ERROR(dense<E>(false, false, rows, hs, cols, d.scale, 0.0f, ds, w.k.data(),
                                w.dq.data() + r0 * hs));
    ZT_RETURN_IF_ERROR(dense<E>(true, false, cols, hs, rows, d.scale, beta, ds,
                                w.q.data() + r0 * hs, w.dk.data()));
  }
  return ok_status();
}

// dst rows (ld apart) += src [T, hs].
void add_rows(float* dst, int64_t ld, const float* src, int64_t T, int64_t hs) {
  for (int64_t t = 0; t < T; ++t) {
    float* o = dst + t * ld;
    const float* i = src + t * hs;
#pragma omp simd
    for (int64_t j = 0; j < hs; ++j) o[j] += i[j];
  }
}

// Forward of every head; exactly one of att and lse is kept.
template <typename E>
Status forward_all(float* out, float* att, float* lse, const E* qkv, int64_t B, int64_t T,
                   int64_t C, int64_t NH) {
  ZT_ASSIGN_OR_RETURN(HeadDims d, make_head_dims(B, T, C, NH));
  if ((att == nullptr) == (lse == nullptr))
    return invalid_argument("attention forward: exactly one of att and lse is kept");
  if (B * T * C == 0) return ok_status();
  return for_each_head(B * NH, [&](int64_t bh) -> Status {
    const int64_t b = bh / NH, h = bh % NH;
    HeadBlocks<E>& w = head_blocks<E>(d, /*backward=*/false);
    copy_head(w, qkv, b, h, d);
    return head_forward(out + b * T * C + h * d.hs, att ? att + bh * T * T : nullptr,
                        lse ? lse + bh * T : nullptr, w, d);
  });
}

template <typename E>
Status backward_all(float* dqkv, const float* dout, const E* qkv, const float* att,
                    const float* lse, int64_t B, int64_t T, int64_t C, int64_t NH) {
  ZT_ASSIGN_OR_RETURN(HeadDims d, make_head_dims(B, T, C, NH));
  if ((att == nullptr) == (lse == nullptr))
    return invalid_argument("attention backward: exactly one of att and lse is given");
  if (B * T * C == 0) return ok_status();
  return for_each_head(B * NH, [&](int64_t bh) -> Status {
    const int64_t b = bh / NH, h = bh % NH, hs = d.hs;
    HeadBlocks<E>& w = head_blocks<E>(d, /*backward=*/true);
    copy_head(w, qkv, b, h, d);
    to_operand(w.dy.data(), dout + b * T * C + h * hs, C, T, hs);
    ZT_RETURN_IF_ERROR(
        head_backward(att ? att + bh * T * T : nullptr, lse ? lse + bh * T : nullptr, w, d));
    float* dq = dqkv + b * T * 3 * C + h * hs;
    add_rows(dq, 3 * C, w.dq.data(), T, hs);
    add_rows(dq + C, 3 * C, w.dk.data(), T, hs);
    add_rows(dq + 2 * C, 3 * C, w.dv.data(), T, hs);
    return ok_status();
  });
}

}  // namespace

Status attention_forward(float* out, float* att, const float* qkv, int64_t B, int64_t T, int64_t C,
                         int64_t NH) {
  return forward_all<float>(out, att, nullptr, qkv, B, T, C, NH);
}

Status attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att,
                          int64_t B, int64_t T, int64_t C, int64_t NH) {
  return backward_all<float>(dqkv, dout, qkv, att, nullptr, B, T, C, NH);
}

Status attention_forward_lse(float* out, float* lse, const float* qkv, int64_t B, int64_t T,
                             int64_t C, int64_t NH) {
  return forward_all<float>(out, nullptr, lse, qkv, B, T, C, NH);
}

Status attention_backward_lse(float* dqkv, const float* dout, const float* qkv, const float* lse,
                              int64_t B, int64_t T, int64_t C, int64_t NH) {
  return backward_all<float>(dqkv, dout, qkv, nullptr, lse, B, T, C, NH);
}

Status attention_forward_bf16(float* out, float* att, float* lse, const Bf16Bits* qkv, int64_t B,
                              int64_t T, int64_t C, int64_t NH) {
  return forward_all<Bf16Bits>(out, att, lse, qkv, B, T, C, NH);
}

Status attention_backward_bf16(float* dqkv, const float* dout, const Bf16Bits* qkv,
                               const float* att, const float* lse, int64_t B, int64_t T, int64_t C,
                               int64_t NH) {
  return backward_all<Bf16Bits>(dqkv, dout, qkv, att, lse, B, T, C, NH);
}

}  // namespace zerotrain::kernels::cpu
