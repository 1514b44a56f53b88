// The row-major → column-major GEMM mapping cuBLASLt runs (gemm_plan.h),
// checked on the CPU: a plain column-major BLAS GEMM evaluated exactly as
// the plan describes it (operands swapped, transposes, leading dimensions,
// batch strides) gives the CPU GEMM's C for every transpose pair, padded
// leading dimensions, batches, alpha/beta and K = 0.
#include "device/cuda/gemm_plan.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "device/cpu/kernels/matmul.h"

namespace zerotrain::device::cuda {
namespace {

// BLAS's column-major definition: D = alpha·op(X)·op(Y) + beta·C, where
// X is `first`, Y is `second`, element (r, c) of a stored column-major
// matrix at c·ld + r.
void column_major_gemm(const GemmPlan& p, const float* first, const float* second, float* c) {
  for (int64_t b = 0; b < p.batch; ++b) {
    const float* x = first + b * p.stride_first;
    const float* y = second + b * p.stride_second;
    float* d = c + b * p.stride_c;
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < p.k; ++l) {
          const float xv = p.trans_first ? x[i * p.ld_first + l] : x[l * p.ld_first + i];
          const float yv = p.trans_second ? y[l * p.ld_second + j] : y[j * p.ld_second + l];
          s += static_cast<double>(xv) * yv;
        }
        float& out = d[j * p.ldc + i];
        out = static_cast<float>(p.alpha * s + (p.beta != 0.0f ? p.beta * out : 0.0));
      }
  }
}

std::vector<float> random(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(GemmPlan, ColumnMajorPlanComputesTheRowMajorProduct) {
  int cases = 0;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t pad : {0, 3})
        for (int64_t batch : {1, 3})
          for (float beta : {0.0f, 1.0f})
            for (int64_t k : {0, 1, 7}) {
              MatmulDesc d{.m = 5,
                           .n = 6,
                           .k = k,
                           .trans_a = ta,
                           .trans_b = tb,
                           .alpha = 0.5f,
                           .beta = beta,
                           .batch = batch};
              const int64_t a_rows = ta ? d.k : d.m, a_cols = ta ? d.m : d.k;
              const int64_t b_rows = tb ? d.n : d.k, b_cols = tb ? d.k : d.n;
              if (pad > 0) {
                d.lda = a_cols + pad;
                d.ldb = b_cols + pad;
                d.ldc = d.n + pad;
              }
              const int64_t lda = d.lda ? d.lda : a_cols, ldb = d.ldb ? d.ldb : b_cols;
              const int64_t ldc = d.ldc ? d.ldc : d.n;
              const auto a = random(static_cast<size_t>(batch * a_rows * lda + 1), 1 + cases);
              const auto b = random(static_cast<size_t>(batch * b_rows * ldb + 1), 100 + cases);
              const auto c0 = random(static_cast<size_t>(batch * d.m * ldc), 200 + cases);
              StatusOr<GemmPlan> p = plan_gemm(d);
              ASSERT_TRUE(p.ok()) << p.status().to_string();
              std::vector<float> want = c0, got = c0;
              ASSERT_TRUE(cpu::matmul(d, a.data(), b.data(), nullptr, want.data()).ok());
              column_major_gemm(*p, b.data(), a.data(), got.data());  // operands swapped
              for (size_t i = 0; i < want.size(); ++i)
                ASSERT_NEAR(got[i], want[i], 1e-5f)
                    << "element " << i << " of " << p->to_string() << " ta " << ta << " tb " << tb;
              ++cases;
            }
  EXPECT_EQ(cases, 96);
}

TEST(GemmPlan, LinearLayerShapes) {
  // out[BT,OC] = inp[BT,C]·W[OC,C]ᵀ: cuBLASLt sees Wᵀ... as (OC x BT) = op(W)·inp.
  StatusOr<GemmPlan> p = plan_gemm(MatmulDesc{.m = 32, .n = 96, .k = 48, .trans_b = true});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->m, 96);
  EXPECT_EQ(p->n, 32);
  EXPECT_EQ(p->k, 48);
  EXPECT_TRUE(p->trans_first);
  EXPECT_FALSE(p->trans_second);
  EXPECT_EQ(p->ld_first, 48);
  EXPECT_EQ(p->ld_second, 48);
  EXPECT_EQ(p->ldc, 96);
}

TEST(GemmPlan, RefusesWhatTheCpuGemmRefuses) {
  EXPECT_EQ(plan_gemm(MatmulDesc{.m = -1, .n = 2, .k = 2}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(plan_gemm(MatmulDesc{.m = 2, .n = 2, .k = 2, .batch = 0}).status().code(),
            StatusCode::kInvalidArgument);
  StatusOr<GemmPlan> p = plan_gemm(MatmulDesc{.m = 4, .n = 4, .k = 8, .lda = 7});
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("lda=7"), std::string::npos) << p.status().message();
}

}  // namespace
}  // namespace zerotrain::device::cuda
