// Internal to kernels/cpu: what the fp32 attention (attention.cc) and its
// bf16 forms (attention_bf16.cc) share — a head's sizes, the row blocking,
// the per-head OpenMP loop, and the causal softmax rows (fp32 in both, as
// autocast keeps softmax in fp32).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/status.h"

namespace zerotrain::device::cpu::attention_detail {

struct HeadDims {
  int64_t B, T, C, NH, hs;
  float scale;  // 1/sqrt(hs)
};

inline StatusOr<HeadDims> make_head_dims(int64_t B, int64_t T, int64_t C, int64_t NH) {
  if (NH <= 0 || C % NH != 0) {
    return invalid_argument(detail::concat("attention: C=", C, " is not a multiple of NH=", NH));
  }
  return HeadDims{B, T, C, NH, C / NH, 1.0f / std::sqrt(static_cast<float>(C / NH))};
}

// Query rows per block: block r0.. only needs keys 0 .. r0+rows-1, so
// the masked triangle is skipped (about 0.6x the full GEMM work at T=256).
constexpr int64_t kRowBlock = 64;

// The first key any query of rows r0 .. r0+rows-1 sees (0 without first):
// a block of late-starting queries (a sliding window, a later packed
// document) meets only keys from there, so its cost is the window's.
inline int64_t block_first_key(const int32_t* first, int64_t r0, int64_t rows) {
  if (first == nullptr) return 0;
  int64_t lo = first[r0];
  for (int64_t i = 1; i < rows; ++i) lo = lo < first[r0 + i] ? lo : first[r0 + i];
  return lo;
}

// Runs fn(bh) for every head on the OpenMP threads, each head's GEMMs
// single-threaded: for GPT-sized heads this is ~4x faster than oneDNN's
// own batched matmul, and a head's score rows stay in cache between its
// GEMMs and softmax. Returns the first failure.
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

// Rows t0 .. t0+rows-1 of one head's scores (row stride ld): softmax over
// first[i] <= j <= t (first null: 0; packed documents and sliding windows
// start later), zero elsewhere below width; lse[i] = log Σ_j exp(score)
// when lse. A row holds keys c0 .. width-1 (key j at row[j - c0]; c0 <=
// every first[i]), so a block whose queries all start late skips the keys
// before.
void causal_softmax_rows(float* att, int64_t ld, int64_t t0, int64_t rows, int64_t width,
                         float* lse, const int32_t* first = nullptr, int64_t c0 = 0);

// Recomputes softmax rows from scores and the saved lse: p = exp(s - lse)
// for first[i] <= j <= t, zero elsewhere below width (keys from c0, as above).
void causal_exp_rows(float* p, int64_t ld, int64_t t0, int64_t rows, int64_t width,
                     const float* lse, const int32_t* first = nullptr, int64_t c0 = 0);

// In place on rows t0.. of datt (stride ldg) with the matching att rows
// (stride lda): dpreatt = att ⊙ (datt - Σ_j att·datt), zero for t < j < width
// (keys from c0, as above).
void causal_softmax_backward_rows(float* datt, int64_t ldg, const float* att, int64_t lda,
                                  int64_t t0, int64_t rows, int64_t width, int64_t c0 = 0);

}  // namespace zerotrain::device::cpu::attention_detail
