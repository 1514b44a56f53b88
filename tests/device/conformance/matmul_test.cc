// GEMMs and linear layers on every built device against the CPU's
// (oneDNN): fp32 within 1e-5 (cuBLASLt computes in fp32, no TF32), bf16
// operands within 1e-2; transposes, leading dimensions, batches, alpha,
// beta, bias, K = 0, and each linear form's accumulate/overwrite rule.
#include <gtest/gtest.h>

#include <vector>

#include "device/conformance/ops_fixture.h"

namespace zerotrain::device::testing {
namespace {

class MatmulConformance : public OpsConformance {};

struct Shape {
  int64_t m, n, k, batch;
  bool ta, tb;
  int64_t pad;
};

TEST_P(MatmulConformance, MatmulEveryLayout) {
  int seed = 1;
  for (const Shape& s : {Shape{64, 48, 32, 1, false, true, 0}, Shape{17, 33, 65, 1, true, false, 0},
                         Shape{8, 8, 8, 3, true, true, 5}, Shape{5, 7, 0, 1, false, false, 0},
                         Shape{256, 384, 192, 2, false, false, 8}})
    for (float beta : {0.0f, 1.0f})
      for (bool bias : {false, true}) {
        MatmulDesc d{.m = s.m,
                     .n = s.n,
                     .k = s.k,
                     .trans_a = s.ta,
                     .trans_b = s.tb,
                     .alpha = 0.75f,
                     .beta = beta,
                     .batch = s.batch};
        const int64_t a_rows = s.ta ? s.k : s.m, a_cols = s.ta ? s.m : s.k;
        const int64_t b_rows = s.tb ? s.n : s.k, b_cols = s.tb ? s.k : s.n;
        if (s.pad) {
          d.lda = a_cols + s.pad;
          d.ldb = b_cols + s.pad;
          d.ldc = s.n + s.pad;
        }
        const int64_t lda = d.lda ? d.lda : a_cols, ldb = d.ldb ? d.ldb : b_cols;
        const int64_t ldc = d.ldc ? d.ldc : s.n;
        const auto a = randn(static_cast<size_t>(s.batch * a_rows * lda + 1), ++seed);
        const auto b = randn(static_cast<size_t>(s.batch * b_rows * ldb + 1), ++seed);
        const auto c0 = randn(static_cast<size_t>(s.batch * s.m * ldc), ++seed);
        const auto bv = randn(static_cast<size_t>(s.n), ++seed);
        const std::string what = "matmul m" + std::to_string(s.m) + " n" + std::to_string(s.n) +
                                 " k" + std::to_string(s.k) + " beta" + std::to_string(beta) +
                                 (bias ? " bias" : "");
        // fp32
        std::vector<float> want = c0;
        ASSERT_TRUE(
            host().matmul(d, a.data(), b.data(), bias ? bv.data() : nullptr, want.data()).ok());
        auto da = upload(a), db = upload(b), dc = upload(c0), dbias = upload(bv);
        Status st = ops().matmul(d, da.ptr(), db.ptr(), bias ? dbias.ptr() : nullptr, dc.ptr());
        ASSERT_TRUE(st.ok()) << what << ": " << st.to_string();
        expect_close(download(dc), want, kFp32Tol, what + " fp32");
        // bf16 operands, fp32 C
        const auto a16 = to_bf16(a), b16 = to_bf16(b);
        std::vector<float> want16 = c0;
        ASSERT_TRUE(
            host()
                .matmul_bf16(d, a16.data(), b16.data(), bias ? bv.data() : nullptr, want16.data())
                .ok());
        auto da16 = upload(a16), db16 = upload(b16);
        auto dc2 = upload(c0);
        ASSERT_TRUE(
            ops()
                .matmul_bf16(d, da16.ptr(), db16.ptr(), bias ? dbias.ptr() : nullptr, dc2.ptr())
                .ok());
        expect_close(download(dc2), want16, kFp32Tol * 10, what + " bf16 operands");
        // bf16 C: overwritten, alpha 1 with a bias
        if (beta == 0.0f) {
          MatmulDesc d1 = d;
          d1.alpha = 1.0f;
          std::vector<BFloat16> want_c(c0.size());
          ASSERT_TRUE(host()
                          .matmul_bf16(d1, a16.data(), b16.data(), bias ? bv.data() : nullptr,
                                       want_c.data())
                          .ok());
          auto dc16 = upload(std::vector<BFloat16>(c0.size()));
          ASSERT_TRUE(
              ops()
                  .matmul_bf16(d1, da16.ptr(), db16.ptr(), bias ? dbias.ptr() : nullptr, dc16.ptr())
                  .ok());
          expect_close(download(dc16), want_c, kBf16Tol, what + " bf16 C");
        }
      }
}

TEST_P(MatmulConformance, Bf16OutputRefusesAccumulation) {
  auto a = upload(std::vector<BFloat16>(16)), c = upload(std::vector<BFloat16>(16));
  Status st = ops().matmul_bf16(MatmulDesc{.m = 4, .n = 4, .k = 4, .beta = 1.0f}, a.ptr(), a.ptr(),
                                nullptr, c.ptr());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
}

TEST_P(MatmulConformance, LinearForwardAndBackward) {
  const int64_t B = 3, T = 11, C = 40, OC = 72, BT = B * T;
  const auto x = randn(BT * C, 1), w = randn(OC * C, 2, 0.2f), bias = randn(OC, 3);
  const auto dout = randn(BT * OC, 4), dx0 = randn(BT * C, 5), dw0 = randn(OC * C, 6),
             db0 = randn(OC, 7);
  auto dx_ = upload(x), dw_ = upload(w), dbias_ = upload(bias), ddout = upload(dout);
  // forward fp32
  std::vector<float> y(BT * OC);
  ASSERT_TRUE(host().linear_forward(y.data(), x.data(), w.data(), bias.data(), B, T, C, OC).ok());
  auto dy = alloc<float>(BT * OC);
  ASSERT_TRUE(ops().linear_forward(dy.ptr(), dx_.ptr(), dw_.ptr(), dbias_.ptr(), B, T, C, OC).ok());
  expect_close(download(dy), y, kFp32Tol, "linear_forward");
  // backward fp32, accumulate and overwrite
  for (bool acc : {false, true}) {
    std::vector<float> gx = dx0, gw = dw0, gb = db0;
    ASSERT_TRUE(host()
                    .linear_backward(gx.data(), gw.data(), gb.data(), dout.data(), x.data(),
                                     w.data(), B, T, C, OC, acc)
                    .ok());
    auto ggx = upload(dx0), ggw = upload(dw0), ggb = upload(db0);
    ASSERT_TRUE(ops()
                    .linear_backward(ggx.ptr(), ggw.ptr(), ggb.ptr(), ddout.ptr(), dx_.ptr(),
                                     dw_.ptr(), B, T, C, OC, acc)
                    .ok());
    expect_close(download(ggx), gx, kFp32Tol, "linear_backward dinp");
    expect_close(download(ggw), gw, kFp32Tol, "linear_backward dweight");
    expect_close(download(ggb), gb, kFp32Tol, "linear_backward dbias");
  }
  // bf16 forms
  const auto x16 = to_bf16(x), w16 = to_bf16(w), dout16 = to_bf16(dout);
  auto dx16 = upload(x16), dw16 = upload(w16), ddout16 = upload(dout16);
  std::vector<float> y32(BT * OC);
  ASSERT_TRUE(host()
                  .linear_forward_bf16(y32.data(), x16.data(), w16.data(), bias.data(), B, T, C, OC)
                  .ok());
  auto dy32 = alloc<float>(BT * OC);
  ASSERT_TRUE(
      ops()
          .linear_forward_bf16(dy32.ptr(), dx16.ptr(), dw16.ptr(), dbias_.ptr(), B, T, C, OC)
          .ok());
  expect_close(download(dy32), y32, 1e-4, "linear_forward_bf16 fp32 out");
  std::vector<BFloat16> y16(BT * OC);
  ASSERT_TRUE(host()
                  .linear_forward_bf16(y16.data(), x16.data(), w16.data(), bias.data(), B, T, C, OC)
                  .ok());
  auto dy16 = alloc<BFloat16>(BT * OC);
  ASSERT_TRUE(
      ops()
          .linear_forward_bf16(dy16.ptr(), dx16.ptr(), dw16.ptr(), dbias_.ptr(), B, T, C, OC)
          .ok());
  expect_close(download(dy16), y16, kBf16Tol, "linear_forward_bf16 bf16 out");
  {
    std::vector<float> gx = dx0, gw = dw0, gb = db0;
    ASSERT_TRUE(host()
                    .linear_backward_bf16(gx.data(), gw.data(), gb.data(), dout16.data(),
                                          x16.data(), w16.data(), B, T, C, OC, true)
                    .ok());
    auto ggx = upload(dx0), ggw = upload(dw0), ggb = upload(db0);
    ASSERT_TRUE(ops()
                    .linear_backward_bf16(ggx.ptr(), ggw.ptr(), ggb.ptr(), ddout16.ptr(),
                                          dx16.ptr(), dw16.ptr(), B, T, C, OC, true)
                    .ok());
    expect_close(download(ggx), gx, 1e-4, "linear_backward_bf16 dinp fp32");
    expect_close(download(ggw), gw, 1e-4, "linear_backward_bf16 dweight");
    expect_close(download(ggb), gb, 1e-5, "linear_backward_bf16 dbias");
  }
  {
    std::vector<BFloat16> gx(BT * C);
    std::vector<float> gw = dw0, gb = db0;
    ASSERT_TRUE(host()
                    .linear_backward_bf16(gx.data(), gw.data(), gb.data(), dout16.data(),
                                          x16.data(), w16.data(), B, T, C, OC)
                    .ok());
    auto ggx = alloc<BFloat16>(BT * C);
    auto ggw = upload(dw0), ggb = upload(db0);
    ASSERT_TRUE(ops()
                    .linear_backward_bf16(ggx.ptr(), ggw.ptr(), ggb.ptr(), ddout16.ptr(),
                                          dx16.ptr(), dw16.ptr(), B, T, C, OC)
                    .ok());
    expect_close(download(ggx), gx, kBf16Tol, "linear_backward_bf16 dinp bf16");
    expect_close(download(ggw), gw, 1e-4, "linear_backward_bf16 (bf16 dinp) dweight");
  }
}

ZT_INSTANTIATE_OPS_CONFORMANCE(MatmulConformance);

}  // namespace
}  // namespace zerotrain::device::testing
