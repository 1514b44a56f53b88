// The attention's bf16 forms (see attention.h), run as autocast runs
// q·kᵀ and att·v: every product takes bf16 operands and accumulates in
// fp32, and softmax and its backward stay fp32. So att is rounded to bf16
// for att·v and for dv = attᵀ·dy, and d preatt for dq and dk; dy comes in
// bf16 (c_proj's input gradient), and out and dqkv are rounded once at the
// end, as the GEMMs next to them read them in bf16 only.
//
// Why its own loop rather than the fp32 one on widened inputs: oneDNN runs
// a bf16 product on AMX only when every operand and the output are dense,
// and then a head's block products are 3-7x faster than the fp32 ones
// (gemm:jit on strided views). So each head first copies its q, k, v (and
// in the backward its dy) into dense [T, hs] blocks, every block
// product writes a dense output, and the results are rounded into the
// strided bf16 tensors (out, dqkv) once per head.
#include <algorithm>
#include <cstring>
#include <vector>

#include "device/cpu/kernels/attention.h"
#include "device/cpu/kernels/attention_parts.h"
#include "device/cpu/kernels/matmul.h"

namespace zerotrain::device::cpu {
namespace {

using namespace attention_detail;

// One thread's reused blocks (dense; T·hs or kRowBlock·T elements each).
struct HeadBlocks {
  std::vector<BFloat16> q, k, v, dy;  // [T, hs]
  std::vector<BFloat16> p16, g16;     // [rows, cols]: att and d preatt rounded
  std::vector<float> s, g;            // [rows, cols]: scores / att, datt
  std::vector<float> y, dq, dk, dv;   // forward: y [rows, hs]; backward: [T, hs]
};

HeadBlocks& head_blocks(const HeadDims& d, bool backward) {
  thread_local HeadBlocks w;
  const auto th = static_cast<size_t>(d.T * d.hs), rt = static_cast<size_t>(kRowBlock * d.T);
  for (auto* v : {&w.q, &w.k, &w.v}) v->resize(th);
  w.p16.resize(rt);
  w.s.resize(rt);
  if (backward) {
    w.dy.resize(th);
    w.g16.resize(rt);
    w.g.resize(rt);
    for (auto* v : {&w.dq, &w.dk, &w.dv}) v->resize(th);
  } else {
    w.y.resize(static_cast<size_t>(kRowBlock * d.hs));
  }
  return w;
}

// Head (b, h)'s q, k, v out of qkv [B,T,3C] into w's dense blocks.
void copy_head(HeadBlocks& w, const BFloat16* qkv, int64_t b, int64_t h, const HeadDims& d) {
  const int64_t T = d.T, C = d.C, hs = d.hs;
  const auto bytes = static_cast<size_t>(hs) * sizeof(BFloat16);
  for (int64_t t = 0; t < T; ++t) {
    const BFloat16* row = qkv + (b * T + t) * 3 * C + h * hs;
    std::memcpy(w.q.data() + t * hs, row, bytes);
    std::memcpy(w.k.data() + t * hs, row + C, bytes);
    std::memcpy(w.v.data() + t * hs, row + 2 * C, bytes);
  }
}

// Dense C = alpha · op(A) · op(B) (+ beta · C): A [m,k] or (ta) [k,m], B
// [k,n] or (tb) [n,k], C [m,n].
Status dense(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, float beta,
             const BFloat16* a, const BFloat16* b, float* c) {
  return matmul_bf16(
      MatmulDesc{
          .m = m, .n = n, .k = k, .trans_a = ta, .trans_b = tb, .alpha = alpha, .beta = beta},
      a, b, nullptr, c);
}

// s [rows, cols - c0] = scale · q[r0 .. r0+rows) · k[c0 .. cols)ᵀ.
Status block_scores(HeadBlocks& w, int64_t r0, int64_t rows, int64_t c0, const HeadDims& d) {
  return dense(false, true, rows, r0 + rows - c0, d.hs, d.scale, 0.0f, w.q.data() + r0 * d.hs,
               w.k.data() + c0 * d.hs, w.s.data());
}

// dst [rows, cols] dense = bf16(src rows, ld apart).
void round_rows(BFloat16* dst, const float* src, int64_t ld, int64_t rows, int64_t cols) {
  if (ld == cols) return bf16_from_float_array(dst, src, rows * cols);
  for (int64_t i = 0; i < rows; ++i) bf16_from_float_array(dst + i * cols, src + i * ld, cols);
}

// One head: att = softmax_causal(scale·q·kᵀ) by row blocks, kept in `att`
// ([T,T]) or as lse ([T]); y (ld C) = bf16(bf16(att)·v). first ([T] or
// null): each query's first key; a block of the lse form meets keys from
// its earliest first only (c0), so a window costs its width.
Status head_forward(BFloat16* y, float* att, float* lse, HeadBlocks& w, const HeadDims& d,
                    const int32_t* first) {
  const int64_t T = d.T, C = d.C, hs = d.hs;
  for (int64_t r0 = 0; r0 < T; r0 += kRowBlock) {
    const int64_t rows = std::min(kRowBlock, T - r0), cols = r0 + rows;
    const int64_t c0 = att ? 0 : block_first_key(first, r0, rows), n = cols - c0;
    ZT_RETURN_IF_ERROR(block_scores(w, r0, rows, c0, d));
    causal_softmax_rows(w.s.data(), n, r0, rows, cols, lse ? lse + r0 : nullptr,
                        first ? first + r0 : nullptr, c0);
    if (att) {
      for (int64_t i = 0; i < rows; ++i) {
        float* row = att + (r0 + i) * T;
        std::memcpy(row, w.s.data() + i * cols, static_cast<size_t>(cols) * sizeof(float));
        std::fill(row + cols, row + T, 0.0f);
      }
    }
    round_rows(w.p16.data(), w.s.data(), n, rows, n);
    ZT_RETURN_IF_ERROR(dense(false, false, rows, hs, n, 1.0f, 0.0f, w.p16.data(),
                             w.v.data() + c0 * hs, w.y.data()));
    for (int64_t i = 0; i < rows; ++i)
      bf16_from_float_array(y + (r0 + i) * C, w.y.data() + i * hs, hs);
  }
  return ok_status();
}

// One head's backward into w.dq, w.dk, w.dv ([T, hs], overwritten): dk
// and dv start at zero and each row block adds its keys' share (keys c0
// .. cols-1, as in the forward).
Status head_backward(const float* att, const float* lse, HeadBlocks& w, const HeadDims& d,
                     const int32_t* first) {
  const int64_t T = d.T, hs = d.hs;
  std::fill(w.dk.begin(), w.dk.end(), 0.0f);
  std::fill(w.dv.begin(), w.dv.end(), 0.0f);
  for (int64_t r0 = 0; r0 < T; r0 += kRowBlock) {
    const int64_t rows = std::min(kRowBlock, T - r0), cols = r0 + rows;
    const int64_t c0 = att ? 0 : block_first_key(first, r0, rows), n = cols - c0;
    const BFloat16* dy = w.dy.data() + r0 * hs;
    // att rows (fp32, for softmax's backward): kept, or recomputed from lse.
    const float* a = att ? att + r0 * T : w.s.data();
    const int64_t lda = att ? T : n;
    if (!att) {
      ZT_RETURN_IF_ERROR(block_scores(w, r0, rows, c0, d));
      causal_exp_rows(w.s.data(), n, r0, rows, cols, lse + r0, first ? first + r0 : nullptr, c0);
    }
    round_rows(w.p16.data(), a, lda, rows, n);
    // datt = dy·vᵀ; dv += attᵀ·dy; dpreatt = softmax'(datt).
    ZT_RETURN_IF_ERROR(
        dense(false, true, rows, n, hs, 1.0f, 0.0f, dy, w.v.data() + c0 * hs, w.g.data()));
    ZT_RETURN_IF_ERROR(
        dense(true, false, n, hs, rows, 1.0f, 1.0f, w.p16.data(), dy, w.dv.data() + c0 * hs));
    causal_softmax_backward_rows(w.g.data(), n, a, lda, r0, rows, cols, c0);
    round_rows(w.g16.data(), w.g.data(), n, rows, n);
    // dq rows = scale·dpreatt·k; dk += scale·dpreattᵀ·q.
    ZT_RETURN_IF_ERROR(dense(false, false, rows, hs, n, d.scale, 0.0f, w.g16.data(),
                             w.k.data() + c0 * hs, w.dq.data() + r0 * hs));
    ZT_RETURN_IF_ERROR(dense(true, false, n, hs, rows, d.scale, 1.0f, w.g16.data(),
                             w.q.data() + r0 * hs, w.dk.data() + c0 * hs));
  }
  return ok_status();
}

// dst rows (ld apart) = bf16(src [T, hs]).
void round_into_rows(BFloat16* dst, int64_t ld, const float* src, int64_t T, int64_t hs) {
  for (int64_t t = 0; t < T; ++t) bf16_from_float_array(dst + t * ld, src + t * hs, hs);
}

}  // namespace

Status attention_forward_bf16(BFloat16* out, float* att, float* lse, const BFloat16* qkv, int64_t B,
                              int64_t T, int64_t C, int64_t NH, const int32_t* first) {
  ZT_ASSIGN_OR_RETURN(HeadDims d, make_head_dims(B, T, C, NH));
  if ((att == nullptr) == (lse == nullptr))
    return invalid_argument("attention_forward_bf16: exactly one of att and lse is kept");
  if (B * T * C == 0) return ok_status();
  return for_each_head(B * NH, [&](int64_t bh) -> Status {
    const int64_t b = bh / NH, h = bh % NH;
    HeadBlocks& w = head_blocks(d, /*backward=*/false);
    copy_head(w, qkv, b, h, d);
    return head_forward(out + b * T * C + h * d.hs, att ? att + bh * T * T : nullptr,
                        lse ? lse + bh * T : nullptr, w, d, first ? first + b * T : nullptr);
  });
}

Status attention_backward_bf16(BFloat16* dqkv, const BFloat16* dout, const BFloat16* qkv,
                               const float* att, const float* lse, int64_t B, int64_t T, int64_t C,
                               int64_t NH, const int32_t* first) {
  ZT_ASSIGN_OR_RETURN(HeadDims d, make_head_dims(B, T, C, NH));
  if ((att == nullptr) == (lse == nullptr))
    return invalid_argument("attention_backward_bf16: exactly one of att and lse is given");
  if (B * T * C == 0) return ok_status();
  return for_each_head(B * NH, [&](int64_t bh) -> Status {
    const int64_t b = bh / NH, h = bh % NH, hs = d.hs;
    HeadBlocks& w = head_blocks(d, /*backward=*/true);
    copy_head(w, qkv, b, h, d);
    for (int64_t t = 0; t < T; ++t)
      std::memcpy(w.dy.data() + t * hs, dout + (b * T + t) * C + h * hs,
                  static_cast<size_t>(hs) * sizeof(BFloat16));
    ZT_RETURN_IF_ERROR(
        head_backward(att ? att + bh * T * T : nullptr, lse ? lse + bh * T : nullptr, w, d,
                      first ? first + b * T : nullptr));
    BFloat16* dq = dqkv + b * T * 3 * C + h * hs;
    round_into_rows(dq, 3 * C, w.dq.data(), T, hs);
    round_into_rows(dq + C, 3 * C, w.dk.data(), T, hs);
    round_into_rows(dq + 2 * C, 3 * C, w.dv.data(), T, hs);
    return ok_status();
  });
}

}  // namespace zerotrain::device::cpu
