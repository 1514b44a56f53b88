// The row-major → column-major GEMM mapping (gemm_plan.h).
#include "device/cuda/gemm_plan.h"

#include "core/log.h"

namespace zerotrain::device::cuda {

std::string GemmPlan::to_string() const {
  return detail::concat("m=", m, " n=", n, " k=", k, " op=", trans_first ? "T" : "N",
                        trans_second ? "T" : "N", " first=", first_rows, "x", first_cols, "/",
                        ld_first, " second=", second_rows, "x", second_cols, "/", ld_second,
                        " c=", c_rows, "x", c_cols, "/", ldc, " batch=", batch);
}

StatusOr<GemmPlan> plan_gemm(const MatmulDesc& d) {
  if (d.m < 0 || d.n < 0 || d.k < 0 || d.batch < 1) {
    return invalid_argument(detail::concat("matmul: bad sizes M=", d.m, " N=", d.n, " K=", d.k,
                                           " batch=", d.batch,
                                           " (need M, N, K >= 0 and batch >= 1)"));
  }
  // Row-major stored shapes (rows, cols) of A and B.
  const int64_t a_rows = d.trans_a ? d.k : d.m, a_cols = d.trans_a ? d.m : d.k;
  const int64_t b_rows = d.trans_b ? d.n : d.k, b_cols = d.trans_b ? d.k : d.n;
  const int64_t lda = d.lda != 0 ? d.lda : a_cols;
  const int64_t ldb = d.ldb != 0 ? d.ldb : b_cols;
  const int64_t ldc = d.ldc != 0 ? d.ldc : d.n;
  if (lda < a_cols || ldb < b_cols || ldc < d.n) {
    return invalid_argument(detail::concat(
        "matmul: leading dimension below the stored row: lda=", lda, " (row ", a_cols,
        "), ldb=", ldb, " (row ", b_cols, "), ldc=", ldc, " (row ", d.n, ")"));
  }
  GemmPlan p;
  p.m = d.n;
  p.n = d.m;
  p.k = d.k;
  // A row-major [r, c] matrix is a column-major [c, r] one.
  p.trans_first = d.trans_b;
  p.first_rows = b_cols;
  p.first_cols = b_rows;
  p.ld_first = ldb;
  p.trans_second = d.trans_a;
  p.second_rows = a_cols;
  p.second_cols = a_rows;
  p.ld_second = lda;
  p.c_rows = d.n;
  p.c_cols = d.m;
  p.ldc = ldc;
  p.batch = d.batch;
  p.stride_first = b_rows * ldb;
  p.stride_second = a_rows * lda;
  p.stride_c = d.m * ldc;
  p.alpha = d.alpha;
  p.beta = d.beta;
  return p;
}

}  // namespace zerotrain::device::cuda
