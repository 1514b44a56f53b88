// Internal to kernels/cpu: the attention's causal softmax over rows of a
// head's scores, forward, from a saved log-sum-exp, and backward — fp32 in
// both the fp32 and the bf16 attention, as autocast keeps softmax in fp32.
// Rows t0 .. t0+rows-1 of the [T,T] map, each ld (or ldg, lda) apart; a row
// t covers keys j <= t and is zero for t < j < width.
#pragma once

#include <cstdint>

namespace zerotrain::kernels::cpu::attention_rows {

// In place: softmax over j <= t; lse[i] = log Σ_j exp(score) when lse.
void causal_softmax_rows(float* att, int64_t ld, int64_t t0, int64_t rows, int64_t width,
                         float* lse);

// In place: p = exp(s - lse) for j <= t.
void causal_exp_rows(float* p, int64_t ld, int64_t t0, int64_t rows, int64_t width,
                     const float* lse);

// In place on datt, with the matching att rows: dpreatt = att ⊙ (datt - Σ_j att·datt).
void causal_softmax_backward_rows(float* datt, int64_t ldg, const float* att, int64_t lda,
                                  int64_t t0, int64_t rows, int64_t width);

}  // namespace zerotrain::kernels::cpu::attention_rows
