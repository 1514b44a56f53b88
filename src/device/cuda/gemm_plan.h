// GemmPlan: a row-major MatmulDesc (matmul_desc.h) as the column-major
// problem cuBLASLt solves, in plain host arithmetic (no CUDA header) so the
// mapping is tested on machines with no GPU against the CPU GEMM.
//
// Row-major C[M,N] is column-major Cᵀ[N,M] in the same bytes, so
//   C = op(A)·op(B)   ⇔   Cᵀ = op(B)ᵀ·op(A)ᵀ,
// and cuBLASLt's first operand is the desc's B, its second the desc's A,
// each with the transpose flag it already has: a row-major [K,N] B is a
// column-major [N,K] matrix (no transpose), a stored-transposed [N,K] B is
// column-major [K,N] (transposed). Leading dimensions carry over as they
// are; a batch steps by stored rows × leading dimension.
//
//   ZT_ASSIGN_OR_RETURN(GemmPlan p, plan_gemm(MatmulDesc{.m = BT, .n = OC, .k = C, .trans_b =
//   true}));
//   // p.m == OC, p.n == BT, p.trans_first == true, p.first_rows == C, ...
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "device/matmul_desc.h"

namespace zerotrain::device::cuda {

// D[m,n] = alpha·op(first)·op(second) + beta·C (+ bias[m] per row),
// column-major, `batch` times.
struct GemmPlan {
  int64_t m = 0, n = 0, k = 0;
  bool trans_first = false, trans_second = false;
  // Stored (column-major) shape and leading dimension of each operand.
  int64_t first_rows = 0, first_cols = 0, ld_first = 0;     // the desc's B
  int64_t second_rows = 0, second_cols = 0, ld_second = 0;  // the desc's A
  int64_t c_rows = 0, c_cols = 0, ldc = 0;
  int64_t batch = 1;
  int64_t stride_first = 0, stride_second = 0, stride_c = 0;  // elements between batches
  float alpha = 1.0f, beta = 0.0f;

  friend bool operator==(const GemmPlan&, const GemmPlan&) = default;
  std::string to_string() const;
};

// InvalidArgument, in the CPU GEMM's words, for negative sizes, batch < 1 or
// a leading dimension below its stored row.
StatusOr<GemmPlan> plan_gemm(const MatmulDesc& desc);

}  // namespace zerotrain::device::cuda
