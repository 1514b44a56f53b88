// Tests of the oneDNN GEMM wrapper against a naive double triple loop: all
// transpose combinations on odd shapes, bias, alpha, accumulate (beta),
// batches, K = 0, argument errors, the primitive cache, and bf16 inputs
// against fp32 within the bound that bf16 rounding implies.
#include "device/cpu/kernels/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>

#include "device/cpu/kernels/reference.h"

namespace zerotrain::device::cpu {
namespace {

using testing::random_floats;

// Reference C = alpha·op(A)·op(B) + bias + beta·C0 in double; also Σ|a·b|
// per element (the scale rounding errors are measured against).
struct Expected {
  std::vector<double> c;
  std::vector<double> abs_sum;
};

Expected reference(const MatmulDesc& d, const std::vector<float>& a, const std::vector<float>& b,
                   const std::vector<float>* bias, const std::vector<float>& c0) {
  Expected e{std::vector<double>(c0.size()), std::vector<double>(c0.size())};
  for (int64_t p = 0; p < d.batch; ++p) {
    const float* A = a.data() + p * d.m * d.k;
    const float* B = b.data() + p * d.k * d.n;
    for (int64_t i = 0; i < d.m; ++i)
      for (int64_t j = 0; j < d.n; ++j) {
        double s = 0, s_abs = 0;
        for (int64_t kk = 0; kk < d.k; ++kk) {
          const double x = d.trans_a ? A[kk * d.m + i] : A[i * d.k + kk];
          const double y = d.trans_b ? B[j * d.k + kk] : B[kk * d.n + j];
          s += x * y;
          s_abs += std::fabs(x * y);
        }
        const int64_t idx = (p * d.m + i) * d.n + j;
        e.c[idx] = d.alpha * s + (bias ? (*bias)[j] : 0.0) + (d.beta != 0 ? d.beta * c0[idx] : 0);
        e.abs_sum[idx] = s_abs;
      }
  }
  return e;
}

void expect_matches(const std::vector<float>& got, const Expected& want, double rel,
                    const std::string& what) {
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = rel * (want.abs_sum[i] + std::fabs(want.c[i])) + 1e-6;
    ASSERT_NEAR(got[i], want.c[i], tol) << what << " element " << i;
  }
}

class MatmulShapes
    : public ::testing::TestWithParam<std::tuple<bool, bool, std::tuple<int, int, int>>> {};

TEST_P(MatmulShapes, MatchesNaiveLoopWithAndWithoutBias) {
  const auto [ta, tb, mnk] = GetParam();
  const auto [m, n, k] = mnk;
  MatmulDesc d{.m = m, .n = n, .k = k, .trans_a = ta, .trans_b = tb};
  auto a = random_floats(m * k, 1), b = random_floats(k * n, 2), bias = random_floats(n, 3);
  // C starts as NaN: with beta = 0 its old contents must never be read.
  std::vector<float> c(m * n, std::numeric_limits<float>::quiet_NaN());
  ASSERT_TRUE(matmul(d, a.data(), b.data(), nullptr, c.data()).ok());
  expect_matches(c, reference(d, a, b, nullptr, c), 1e-5, "no bias");
  ASSERT_TRUE(matmul(d, a.data(), b.data(), bias.data(), c.data()).ok());
  expect_matches(c, reference(d, a, b, &bias, c), 1e-5, "bias");
}

INSTANTIATE_TEST_SUITE_P(
    AllTransposes, MatmulShapes,
    ::testing::Combine(::testing::Bool(), ::testing::Bool(),
                       ::testing::Values(std::tuple{1, 1, 1}, std::tuple{7, 5, 13},
                                         std::tuple{33, 65, 17}, std::tuple{96, 130, 64})));

TEST(Matmul, BetaOneAccumulatesIntoC) {
  MatmulDesc d{.m = 9, .n = 11, .k = 6, .trans_a = true, .beta = 1.0f};
  auto a = random_floats(9 * 6, 4), b = random_floats(6 * 11, 5);
  auto c = random_floats(9 * 11, 6);
  const auto want = reference(d, a, b, nullptr, c);
  ASSERT_TRUE(matmul(d, a.data(), b.data(), nullptr, c.data()).ok());
  expect_matches(c, want, 1e-5, "C += A^T B");
  // Twice more accumulates twice more: C0 + 3·AB.
  MatmulDesc once = d;
  once.beta = 0.0f;
  std::vector<float> ab(9 * 11);
  ASSERT_TRUE(matmul(once, a.data(), b.data(), nullptr, ab.data()).ok());
  std::vector<float> c2 = c;
  ASSERT_TRUE(matmul(d, a.data(), b.data(), nullptr, c2.data()).ok());
  ASSERT_TRUE(matmul(d, a.data(), b.data(), nullptr, c2.data()).ok());
  for (size_t i = 0; i < c.size(); ++i) EXPECT_NEAR(c2[i], c[i] + 2 * ab[i], 1e-4);
}

TEST(Matmul, AlphaScalesProductButNotBias) {
  MatmulDesc d{.m = 5, .n = 7, .k = 3, .trans_b = true, .alpha = 0.25f, .beta = 2.0f};
  auto a = random_floats(15, 7), b = random_floats(21, 8), bias = random_floats(7, 9);
  auto c = random_floats(35, 10);
  const auto want = reference(d, a, b, &bias, c);
  ASSERT_TRUE(matmul(d, a.data(), b.data(), bias.data(), c.data()).ok());
  expect_matches(c, want, 1e-5, "0.25·AB^T + bias + 2·C");
}

TEST(Matmul, BatchedProductsAreIndependentAndShareBias) {
  MatmulDesc d{.m = 4, .n = 6, .k = 5, .trans_b = true, .batch = 3};
  auto a = random_floats(3 * 20, 11), b = random_floats(3 * 30, 12), bias = random_floats(6, 13);
  std::vector<float> c(3 * 24);
  ASSERT_TRUE(matmul(d, a.data(), b.data(), bias.data(), c.data()).ok());
  expect_matches(c, reference(d, a, b, &bias, c), 1e-5, "batched");
}

// A column block of wider matrices: op(A) is columns [2, 2+K) of a [M,11]
// (or [K,13] when transposed) array, and C is columns [1, 1+N) of [M,9].
TEST(Matmul, LeadingDimensionsAddressBlocksAndLeaveGapsUntouched) {
  constexpr int M = 6, N = 5, K = 4;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const int64_t lda = ta ? 13 : 11, ldb = tb ? 7 : 8, ldc = 9;
      auto wide_a = random_floats((ta ? K : M) * lda, 30),
           wide_b = random_floats((tb ? N : K) * ldb, 31);
      std::vector<float> wide_c((M - 1) * ldc + N + 1, -7.0f);
      // Dense copies of the blocks for the reference.
      std::vector<float> a(M * K), b(K * N), c(M * N, -7.0f);
      const int as = ta ? M : K, bs = tb ? K : N;
      for (int r = 0; r < (ta ? K : M); ++r)
        for (int j = 0; j < as; ++j) a[r * as + j] = wide_a[r * lda + 2 + j];
      for (int r = 0; r < (tb ? N : K); ++r)
        for (int j = 0; j < bs; ++j) b[r * bs + j] = wide_b[r * ldb + j];
      MatmulDesc d{.m = M, .n = N, .k = K, .trans_a = ta, .trans_b = tb, .beta = 1.0f};
      const auto want = reference(d, a, b, nullptr, c);
      d.lda = lda;
      d.ldb = ldb;
      d.ldc = ldc;
      ASSERT_TRUE(matmul(d, wide_a.data() + 2, wide_b.data(), nullptr, wide_c.data() + 1).ok());
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < ldc && i * ldc + j < static_cast<int>(wide_c.size()); ++j) {
          const float got = wide_c[i * ldc + j];
          if (j >= 1 && j <= N) {
            ASSERT_NEAR(got, want.c[i * N + j - 1], 1e-5 * (want.abs_sum[i * N + j - 1] + 8));
          } else {
            ASSERT_EQ(got, -7.0f) << "gap element (" << i << ", " << j << ") was written";
          }
        }
      auto impl = matmul_impl_name(d, false, GemmInput::kF32);
      ASSERT_TRUE(impl.ok());
      EXPECT_NE(impl->rfind("ref", 0), 0u) << "strided operands fell back to " << *impl;
    }
  }
}

TEST(Matmul, LeadingDimensionBelowRowIsInvalidArgument) {
  std::vector<float> x(64);
  Status s =
      matmul(MatmulDesc{.m = 2, .n = 3, .k = 4, .lda = 3}, x.data(), x.data(), nullptr, x.data());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("lda=3 (row 4)"), std::string::npos) << s.message();
}

TEST(Matmul, EmptyKGivesBiasPlusBetaC) {
  MatmulDesc d{.m = 2, .n = 3, .k = 0, .beta = 1.0f};
  std::vector<float> bias{1, 2, 3}, c{10, 20, 30, 40, 50, 60};
  ASSERT_TRUE(matmul(d, nullptr, nullptr, bias.data(), c.data()).ok());
  EXPECT_EQ(c, (std::vector<float>{11, 22, 33, 41, 52, 63}));
}

TEST(Matmul, BadSizesAndNullOperandsAreInvalidArgument) {
  std::vector<float> x(4);
  Status s = matmul(MatmulDesc{.m = -1, .n = 2, .k = 2}, x.data(), x.data(), nullptr, x.data());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("M=-1"), std::string::npos) << s.message();
  s = matmul(MatmulDesc{.m = 2, .n = 2, .k = 1}, nullptr, x.data(), nullptr, x.data());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("A or B is null"), std::string::npos) << s.message();
}

TEST(Matmul, PrimitiveIsCachedPerDistinctDesc) {
  MatmulDesc d{.m = 17, .n = 19, .k = 23};
  auto a = random_floats(17 * 23, 14), b = random_floats(23 * 19, 15);
  std::vector<float> c(17 * 19);
  ASSERT_TRUE(matmul(d, a.data(), b.data(), nullptr, c.data()).ok());
  const int64_t after_first = matmul_cache_size();
  ASSERT_TRUE(matmul(d, a.data(), b.data(), nullptr, c.data()).ok());
  EXPECT_EQ(matmul_cache_size(), after_first);
  d.beta = 1.0f;  // a different desc is a different primitive
  ASSERT_TRUE(matmul(d, a.data(), b.data(), nullptr, c.data()).ok());
  EXPECT_EQ(matmul_cache_size(), after_first + 1);
}

// Large fp32 products with B not transposed and no bias run through
// dnnl_sgemm (A·B, and Aᵀ·B with K <= 256), the rest through the matmul
// primitive: both paths against the loop, with alpha, beta = 1 on NaN-free
// C, beta = 0 on a NaN C, and A and C as column blocks of wider arrays.
TEST(Matmul, LargeProductsTakeSgemmOrThePrimitiveByShapeAndMatchTheLoop) {
  struct Case {
    bool ta, tb, bias;
    int m, n, k;
    const char* path;  // "sgemm:jit" or "" (a primitive)
  };
  for (const Case& t :
       {Case{false, false, false, 130, 129, 160, "sgemm:jit"},
        Case{true, false, false, 160, 100, 200, "sgemm:jit"},
        Case{true, false, false, 100, 70, 300, ""}, Case{false, true, false, 130, 129, 160, ""},
        Case{false, false, true, 130, 129, 160, ""}}) {
    for (float beta : {0.0f, 1.0f}) {
      SCOPED_TRACE(::testing::Message()
                   << "ta " << t.ta << " tb " << t.tb << " bias " << t.bias << " " << t.m << "x"
                   << t.n << "x" << t.k << " beta " << beta);
      MatmulDesc d{.m = t.m,
                   .n = t.n,
                   .k = t.k,
                   .trans_a = t.ta,
                   .trans_b = t.tb,
                   .alpha = 0.5f,
                   .beta = beta};
      auto a = random_floats(t.m * t.k, 40), b = random_floats(t.k * t.n, 41);
      auto bias = random_floats(t.n, 42);
      auto c = beta == 0.0f ? std::vector<float>(t.m * t.n, std::nanf(""))
                            : random_floats(t.m * t.n, 43);
      const auto want = reference(d, a, b, t.bias ? &bias : nullptr, c);
      // A and C as blocks of arrays 3 columns wider.
      const int a_rows = t.ta ? t.k : t.m, a_cols = t.ta ? t.m : t.k;
      std::vector<float> wide_a(a_rows * (a_cols + 3)), wide_c(t.m * (t.n + 3), -7.0f);
      for (int r = 0; r < a_rows; ++r)
        for (int j = 0; j < a_cols; ++j) wide_a[r * (a_cols + 3) + j] = a[r * a_cols + j];
      for (int r = 0; r < t.m; ++r)
        for (int j = 0; j < t.n; ++j) wide_c[r * (t.n + 3) + j] = c[r * t.n + j];
      d.lda = a_cols + 3;
      d.ldc = t.n + 3;
      auto impl = matmul_impl_name(d, t.bias, GemmInput::kF32);
      ASSERT_TRUE(impl.ok());
      if (*t.path) {
        EXPECT_EQ(*impl, t.path);
      } else {
        EXPECT_NE(*impl, "sgemm:jit");
      }
      ASSERT_TRUE(
          matmul(d, wide_a.data(), b.data(), t.bias ? bias.data() : nullptr, wide_c.data()).ok());
      std::vector<float> got(t.m * t.n);
      for (int r = 0; r < t.m; ++r)
        for (int j = 0; j < t.n + 3; ++j) {
          if (j < t.n) {
            got[r * t.n + j] = wide_c[r * (t.n + 3) + j];
          } else {
            ASSERT_EQ(wide_c[r * (t.n + 3) + j], -7.0f) << "gap written at row " << r;
          }
        }
      expect_matches(got, want, 1e-5, "product");
    }
  }
}

TEST(Matmul, Fp32TransformerShapeUsesOptimisedKernel) {
  auto impl = matmul_impl_name(MatmulDesc{.m = 256, .n = 2304, .k = 768, .trans_b = true}, true,
                               GemmInput::kF32);
  ASSERT_TRUE(impl.ok()) << impl.status().to_string();
  std::printf("fp32 impl: %s\n", impl->c_str());
  EXPECT_NE(impl->rfind("ref", 0), 0u) << *impl;
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(to_bfloat16(1.0f).bits, 0x3f80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even 1.0.
  EXPECT_EQ(to_bfloat16(1.00390625f).bits, 0x3f80);
  // 1 + 3·2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: goes up.
  EXPECT_EQ(to_bfloat16(1.01171875f).bits, 0x3f82);
  EXPECT_EQ(to_bfloat16(1.0f + 1.0f / 128 + 1.0f / 4096).bits, 0x3f81);
  EXPECT_EQ(to_float(to_bfloat16(-2.5f)), -2.5f);
  EXPECT_TRUE(std::isnan(to_float(to_bfloat16(std::nanf("")))));
  EXPECT_EQ(to_bfloat16(std::numeric_limits<float>::infinity()).bits, 0x7f80);
}

class Bf16Matmul : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

// Each bf16 input carries relative error <= 2^-9, so each product <= ~2^-8:
// |C_bf16 - C_fp32| <= 2^-8·Σ|a·b| (+ fp32 accumulation). Against an fp32
// GEMM of the already-rounded inputs only accumulation order differs.
TEST_P(Bf16Matmul, WithinBf16RoundingOfFp32) {
  const auto [ta, tb] = GetParam();
  MatmulDesc d{.m = 37, .n = 29, .k = 70, .trans_a = ta, .trans_b = tb, .beta = 1.0f};
  auto a = random_floats(37 * 70, 21), b = random_floats(70 * 29, 22), bias = random_floats(29, 23);
  std::vector<BFloat16> ah(a.size()), bh(b.size());
  bf16_from_float_array(ah.data(), a.data(), a.size());
  bf16_from_float_array(bh.data(), b.data(), b.size());
  auto c = random_floats(37 * 29, 24);
  const auto want = reference(d, a, b, &bias, c);
  std::vector<float> ar(a.size()), br(b.size());
  float_from_bf16_array(ar.data(), ah.data(), a.size());
  float_from_bf16_array(br.data(), bh.data(), b.size());
  const auto want_rounded = reference(d, ar, br, &bias, c);
  ASSERT_TRUE(matmul_bf16(d, ah.data(), bh.data(), bias.data(), c.data()).ok());
  for (size_t i = 0; i < c.size(); ++i) {
    ASSERT_NEAR(c[i], want.c[i], std::ldexp(want.abs_sum[i], -8) + 1e-5) << i;
    ASSERT_NEAR(c[i], want_rounded.c[i], 1e-5 * (want_rounded.abs_sum[i] + 1)) << i;
  }
  auto impl = matmul_impl_name(d, true, GemmInput::kBf16);
  ASSERT_TRUE(impl.ok());
  std::printf("bf16 impl: %s\n", impl->c_str());
}

INSTANTIATE_TEST_SUITE_P(AllTransposes, Bf16Matmul,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()));

// A bf16 C holds the fp32-output product (same inputs, same bias) rounded
// to nearest even, bit for bit, for every transpose, with and without a
// bias, and as a column block of a wider C whose gaps stay untouched.
TEST_P(Bf16Matmul, Bf16OutputIsTheFp32OutputRounded) {
  const auto [ta, tb] = GetParam();
  constexpr int64_t M = 37, N = 29, K = 70, ldc = 40;
  auto a = random_floats(M * K, 31), b = random_floats(K * N, 32), bias = random_floats(N, 33);
  std::vector<BFloat16> ah(a.size()), bh(b.size());
  bf16_from_float_array(ah.data(), a.data(), a.size());
  bf16_from_float_array(bh.data(), b.data(), b.size());
  for (const float* bp :
       {static_cast<const float*>(nullptr), static_cast<const float*>(bias.data())}) {
    MatmulDesc d{.m = M, .n = N, .k = K, .trans_a = ta, .trans_b = tb, .ldc = ldc};
    std::vector<float> wide(M * ldc, 0.0f);
    ASSERT_TRUE(matmul_bf16(d, ah.data(), bh.data(), bp, wide.data()).ok());
    const BFloat16 gap{0x1234};
    std::vector<BFloat16> c(M * ldc, gap);
    ASSERT_TRUE(matmul_bf16(d, ah.data(), bh.data(), bp, c.data()).ok());
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < ldc; ++j) {
        const BFloat16 want = j < N ? to_bfloat16(wide[i * ldc + j]) : gap;
        ASSERT_EQ(c[i * ldc + j], want) << "row " << i << " col " << j << (bp ? " bias" : "");
      }
  }
}

TEST(Bf16Matmul, Bf16OutputRefusesBetaAndScaledBiasAndRoundsAnEmptyK) {
  std::vector<BFloat16> a(12, to_bfloat16(1.0f)), b(12, to_bfloat16(2.0f)), c(16);
  std::vector<float> bias = {0.5f, 1.0f / 3, -2.0f, 7.0f};
  EXPECT_EQ(matmul_bf16(MatmulDesc{.m = 4, .n = 4, .k = 3, .beta = 1.0f}, a.data(), b.data(),
                        nullptr, c.data())
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(matmul_bf16(MatmulDesc{.m = 4, .n = 4, .k = 3, .alpha = 0.5f}, a.data(), b.data(),
                        bias.data(), c.data())
                .code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE(matmul_bf16(MatmulDesc{.m = 4, .n = 4, .k = 3, .alpha = 0.5f}, a.data(), b.data(),
                          nullptr, c.data())
                  .ok());
  EXPECT_EQ(to_float(c[5]), 3.0f);  // 0.5 · 3 · (1 · 2)
  ASSERT_TRUE(
      matmul_bf16(MatmulDesc{.m = 4, .n = 4, .k = 0}, a.data(), b.data(), bias.data(), c.data())
          .ok());
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(c[i], to_bfloat16(bias[i % 4])) << i;
}

}  // namespace
}  // namespace zerotrain::device::cpu
