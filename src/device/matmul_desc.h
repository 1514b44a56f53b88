// MatmulDesc: one GEMM's shape for Ops::matmul (every device reads it the
// same way).
//
//   // out[BT,OC] = inp[BT,C] · weight[OC,C]ᵀ
//   MatmulDesc d{.m = BT, .n = OC, .k = C, .trans_b = true};
//
// Thread-safety: a plain value.
#pragma once

#include <cstdint>

namespace zerotrain::device {

// One product (or `batch` independent ones) in row-major storage:
//   op(A) is [M,K]: A is stored [M,K], or [K,M] when trans_a.
//   op(B) is [K,N]: B is stored [K,N], or [N,K] when trans_b.
//   C is stored [M,N].
// Leading dimensions (row strides of the matrices as stored) default to
// dense; a larger one addresses a column block of a wider matrix, e.g. one
// head's q inside qkv [T,3C] is {rows T, cols hs, ld 3C}. Elements between
// rows are never read or written.
// With batch > 1 the operands are `batch` such matrices one after another
// (A [batch, stored rows, lda] etc.); the bias [N] is shared by all of them.
struct MatmulDesc {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  bool trans_a = false;
  bool trans_b = false;
  float alpha = 1.0f;  // scales op(A)·op(B) only, not the bias
  float beta = 0.0f;   // 0: C is overwritten (its old contents are never read); 1: accumulate
  int64_t batch = 1;
  int64_t lda = 0;  // 0: dense (K, or M when trans_a)
  int64_t ldb = 0;  // 0: dense (N, or K when trans_b)
  int64_t ldc = 0;  // 0: dense (N)
};

}  // namespace zerotrain::device
