// Forward against double references and backward against double-precision
// central finite differences, for the encoder, LayerNorm, linear, GELU and
// residual ops, on small odd shapes (B=2, T=5, C=12, OC=7, V=17). Also the
// accumulate-into-grad contract and the encoder's token-range error.
// Objective for gradient checks: L = Σ w·out with fixed random w = dout.
#include "device/cpu/kernels/ops.h"

#include <gtest/gtest.h>

#include "device/cpu/kernels/reference.h"

namespace zerotrain::device::cpu {
namespace {

using testing::dot;
using testing::expect_all_near;
using testing::expect_gradient_near;
using testing::random_floats;
using testing::to_double;
using testing::Vec;
namespace ref = testing::ref;

constexpr int B = 2, T = 5, C = 12, OC = 7, V = 17;

TEST(Encoder, ForwardAndScatterAddBackward) {
  // Token 3 appears three times: its wte row must collect all three.
  std::vector<int32_t> tok{3, 0, 16, 3, 5, 7, 3, 1, 9, 2};
  auto wte = random_floats(V * C, 1), wpe = random_floats(T * C, 2);
  std::vector<float> out(B * T * C);
  ASSERT_TRUE(encoder_forward(out.data(), tok.data(), wte.data(), wpe.data(), B, T, C, V).ok());
  expect_all_near(out, ref::encoder(tok, to_double(wte), to_double(wpe), B, T, C), 1e-6, "out");

  auto w = random_floats(B * T * C, 3);
  std::vector<float> dwte(V * C, 0.0f), dwpe(T * C, 0.0f);
  encoder_backward(dwte.data(), dwpe.data(), w.data(), tok.data(), B, T, C);
  const Vec wte_d = to_double(wte), wpe_d = to_double(wpe);
  expect_gradient_near([&](const Vec& x) { return dot(w, ref::encoder(tok, x, wpe_d, B, T, C)); },
                       wte_d, dwte, "dwte");
  expect_gradient_near([&](const Vec& x) { return dot(w, ref::encoder(tok, wte_d, x, B, T, C)); },
                       wpe_d, dwpe, "dwpe");
}

TEST(Encoder, TokenOutOfRangeNamesPosition) {
  std::vector<int32_t> tok(B * T, 0);
  tok[1 * T + 3] = V;
  std::vector<float> wte(V * C), wpe(T * C), out(B * T * C);
  Status s = encoder_forward(out.data(), tok.data(), wte.data(), wpe.data(), B, T, C, V);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("token id 17 at (b=1, t=3)"), std::string::npos) << s.message();
}

TEST(LayerNorm, ForwardStatsAndBackward) {
  auto x = random_floats(B * T * C, 4, 2.0f), w = random_floats(C, 5), bias = random_floats(C, 6);
  for (float& v : x) v += 3.0f;  // a nonzero mean exercises the centring
  std::vector<float> out(B * T * C), mean(B * T), rstd(B * T);
  layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), bias.data(), B, T, C);
  const Vec xd = to_double(x), wd = to_double(w), bd = to_double(bias);
  expect_all_near(out, ref::layernorm(xd, wd, bd, B * T, C), 1e-5, "out");
  double m0 = 0;
  for (int c = 0; c < C; ++c) m0 += x[c];
  EXPECT_NEAR(mean[0], m0 / C, 1e-5);

  auto g = random_floats(B * T * C, 7);
  std::vector<float> dx(B * T * C, 0.0f), dw(C, 0.0f), db(C, 0.0f);
  layernorm_backward(dx.data(), dw.data(), db.data(), g.data(), x.data(), w.data(), mean.data(),
                     rstd.data(), B, T, C);
  auto f_x = [&](const Vec& v) { return dot(g, ref::layernorm(v, wd, bd, B * T, C)); };
  auto f_w = [&](const Vec& v) { return dot(g, ref::layernorm(xd, v, bd, B * T, C)); };
  auto f_b = [&](const Vec& v) { return dot(g, ref::layernorm(xd, wd, v, B * T, C)); };
  expect_gradient_near(f_x, xd, dx, "dinp");
  expect_gradient_near(f_w, wd, dw, "dweight");
  expect_gradient_near(f_b, bd, db, "dbias");

  // Accumulates: a second backward doubles every gradient.
  std::vector<float> dx2 = dx, dw2 = dw, db2 = db;
  layernorm_backward(dx2.data(), dw2.data(), db2.data(), g.data(), x.data(), w.data(), mean.data(),
                     rstd.data(), B, T, C);
  for (int c = 0; c < C; ++c) {
    EXPECT_NEAR(dw2[c], 2 * dw[c], 1e-5 * (1 + std::fabs(dw[c])));
    EXPECT_NEAR(db2[c], 2 * db[c], 1e-5 * (1 + std::fabs(db[c])));
  }
  for (size_t i = 0; i < dx.size(); ++i) EXPECT_NEAR(dx2[i], 2 * dx[i], 1e-5);
}

TEST(Linear, ForwardAndBackwardWithBias) {
  auto x = random_floats(B * T * C, 8), w = random_floats(OC * C, 9), b = random_floats(OC, 10);
  std::vector<float> out(B * T * OC);
  ASSERT_TRUE(linear_forward(out.data(), x.data(), w.data(), b.data(), B, T, C, OC).ok());
  const Vec xd = to_double(x), wd = to_double(w), bd = to_double(b);
  expect_all_near(out, ref::linear(xd, wd, bd, B * T, C, OC), 1e-5, "out");

  // Grad buffers start nonzero: the backward must add to them.
  auto g = random_floats(B * T * OC, 11);
  auto dx0 = random_floats(B * T * C, 12), dw0 = random_floats(OC * C, 13);
  auto db0 = random_floats(OC, 14);
  std::vector<float> dx = dx0, dw = dw0, db = db0;
  ASSERT_TRUE(
      linear_backward(dx.data(), dw.data(), db.data(), g.data(), x.data(), w.data(), B, T, C, OC)
          .ok());
  auto minus = [](std::vector<float> a, const std::vector<float>& b0) {
    for (size_t i = 0; i < a.size(); ++i) a[i] -= b0[i];
    return a;
  };
  auto f_x = [&](const Vec& v) { return dot(g, ref::linear(v, wd, bd, B * T, C, OC)); };
  auto f_w = [&](const Vec& v) { return dot(g, ref::linear(xd, v, bd, B * T, C, OC)); };
  auto f_b = [&](const Vec& v) { return dot(g, ref::linear(xd, wd, v, B * T, C, OC)); };
  expect_gradient_near(f_x, xd, minus(dx, dx0), "dinp");
  expect_gradient_near(f_w, wd, minus(dw, dw0), "dweight");
  expect_gradient_near(f_b, bd, minus(db, db0), "dbias");

  // dinp_accumulate false overwrites dinp (garbage before) with exactly
  // what accumulating into zeros gives; dweight and dbias still add.
  std::vector<float> over(dx0.size(), 1e30f), into_zero(dx0.size(), 0.0f);
  std::vector<float> dw1 = dw0, db1 = db0, dw2 = dw0, db2 = db0;
  ASSERT_TRUE(linear_backward(over.data(), dw1.data(), db1.data(), g.data(), x.data(), w.data(), B,
                              T, C, OC, /*dinp_accumulate=*/false)
                  .ok());
  ASSERT_TRUE(linear_backward(into_zero.data(), dw2.data(), db2.data(), g.data(), x.data(),
                              w.data(), B, T, C, OC)
                  .ok());
  EXPECT_EQ(over, into_zero);
  EXPECT_EQ(dw1, dw2);
  EXPECT_EQ(db1, db2);
}

TEST(Linear, NoBiasAndNoInputGradient) {
  auto x = random_floats(B * T * C, 15), w = random_floats(OC * C, 16);
  std::vector<float> out(B * T * OC);
  ASSERT_TRUE(linear_forward(out.data(), x.data(), w.data(), nullptr, B, T, C, OC).ok());
  const Vec xd = to_double(x), wd = to_double(w);
  expect_all_near(out, ref::linear(xd, wd, {}, B * T, C, OC), 1e-5, "out");
  auto g = random_floats(B * T * OC, 17);
  std::vector<float> dw(OC * C, 0.0f);
  ASSERT_TRUE(
      linear_backward(nullptr, dw.data(), nullptr, g.data(), x.data(), w.data(), B, T, C, OC).ok());
  auto f_w = [&](const Vec& v) { return dot(g, ref::linear(xd, v, {}, B * T, C, OC)); };
  expect_gradient_near(f_w, wd, dw, "dweight");
}

TEST(Linear, Bf16ForwardWithinRoundingOfFp32) {
  auto x = random_floats(B * T * C, 18), w = random_floats(OC * C, 19), b = random_floats(OC, 20);
  std::vector<BFloat16> xh(x.size()), wh(w.size());
  bf16_from_float_array(xh.data(), x.data(), x.size());
  bf16_from_float_array(wh.data(), w.data(), w.size());
  std::vector<float> out(B * T * OC);
  ASSERT_TRUE(linear_forward_bf16(out.data(), xh.data(), wh.data(), b.data(), B, T, C, OC).ok());
  const Vec want = ref::linear(to_double(x), to_double(w), to_double(b), B * T, C, OC);
  // Σ|x·w| <= C·max|x|·max|w| ~ 12·3·3; 2^-8 of that bounds the error.
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], want[i], 0.5) << i;
  double err = 0, mag = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    err += std::fabs(out[i] - want[i]);
    mag += std::fabs(want[i]);
  }
  EXPECT_LT(err / mag, 1.0 / 128) << "mean relative error of bf16 forward";
}

TEST(Linear, Bf16BackwardWithinRoundingOfFp32) {
  auto x = random_floats(B * T * C, 26), w = random_floats(OC * C, 27);
  auto g = random_floats(B * T * OC, 28);
  std::vector<BFloat16> xh(x.size()), wh(w.size()), gh(g.size());
  bf16_from_float_array(xh.data(), x.data(), x.size());
  bf16_from_float_array(wh.data(), w.data(), w.size());
  bf16_from_float_array(gh.data(), g.data(), g.size());
  std::vector<float> dx(B * T * C, 0.0f), dw(OC * C, 0.0f), db(OC, 0.0f);
  std::vector<float> dx32 = dx, dw32 = dw, db32 = db;
  ASSERT_TRUE(linear_backward_bf16(dx.data(), dw.data(), db.data(), gh.data(), xh.data(), wh.data(),
                                   B, T, C, OC)
                  .ok());
  ASSERT_TRUE(linear_backward(dx32.data(), dw32.data(), db32.data(), g.data(), x.data(), w.data(),
                              B, T, C, OC)
                  .ok());
  // Each operand rounds with relative error <= 2^-9: a sum of K products
  // of magnitude ~1 moves by at most about K·2^-8 (K = OC, B·T, B·T).
  for (size_t i = 0; i < dx.size(); ++i) EXPECT_NEAR(dx[i], dx32[i], OC * 3 * 3 / 256.0) << i;
  for (size_t i = 0; i < dw.size(); ++i) EXPECT_NEAR(dw[i], dw32[i], B * T * 9 / 256.0) << i;
  for (size_t i = 0; i < db.size(); ++i) EXPECT_NEAR(db[i], db32[i], B * T * 3 / 256.0) << i;
  double err = 0, mag = 0;
  for (size_t i = 0; i < dw.size(); ++i) {
    err += std::fabs(dw[i] - dw32[i]);
    mag += std::fabs(dw32[i]);
  }
  EXPECT_LT(err / mag, 1.0 / 128) << "mean relative error of bf16 dweight";
}

TEST(Gelu, ForwardAndBackward) {
  auto x = random_floats(B * T * 4 * C, 21, 2.0f);
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> out(n);
  gelu_forward(out.data(), x.data(), n);
  const Vec xd = to_double(x);
  expect_all_near(out, ref::gelu(xd), 1e-6, "out");
  auto g = random_floats(n, 22);
  std::vector<float> dx(n, 0.0f);
  gelu_backward(dx.data(), x.data(), g.data(), n);
  expect_gradient_near([&](const Vec& v) { return dot(g, ref::gelu(v)); }, xd, dx, "dinp");
  // accumulate false overwrites (garbage before) with the same values.
  std::vector<float> over(n, 1e30f);
  gelu_backward(over.data(), x.data(), g.data(), n, /*accumulate=*/false);
  EXPECT_EQ(over, dx);
  // accumulate true adds: twice the gradient.
  gelu_backward(dx.data(), x.data(), g.data(), n);
  for (int64_t i = 0; i < n; i += 97) EXPECT_FLOAT_EQ(dx[i], 2 * over[i]);
}

// The bf16 path's gelu: at a bf16 input, the outputs are the fp32
// kernels' results (at that input) rounded, bit for bit. 4099 elements:
// SIMD bodies, a tail and several threads' chunks; the values span gelu's
// curved part and both flat ends.
TEST(Gelu, Bf16FormsRoundTheFp32Results) {
  const int64_t n = 4099;
  auto x = random_floats(n, 26, 6.0f), g = random_floats(n, 27);
  std::vector<BFloat16> saved(n), out(n), dx16(n);
  bf16_from_float_array(saved.data(), x.data(), n);
  std::vector<float> xr(n), ref_out(n), ref_dx(n);
  float_from_bf16_array(xr.data(), saved.data(), n);
  gelu_forward(ref_out.data(), xr.data(), n);
  gelu_forward_bf16(out.data(), saved.data(), n);
  gelu_backward_bf16(dx16.data(), saved.data(), g.data(), n);
  gelu_backward(ref_dx.data(), xr.data(), g.data(), n, /*accumulate=*/false);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(out[i], to_bfloat16(ref_out[i])) << i;
    ASSERT_EQ(dx16[i], to_bfloat16(ref_dx[i])) << i;
  }
}

TEST(LayerNorm, Bf16FormRoundsTheFp32Result) {
  constexpr int64_t rows = 37, width = 200;  // a row length with a SIMD tail
  auto x = random_floats(rows * width, 28, 3.0f), w = random_floats(width, 29);
  auto bias = random_floats(width, 30);
  std::vector<float> out(rows * width), mean(rows), rstd(rows), mean16(rows), rstd16(rows);
  std::vector<BFloat16> out16(rows * width);
  layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), bias.data(), 1, rows,
                    width);
  layernorm_forward_bf16(out16.data(), mean16.data(), rstd16.data(), x.data(), w.data(),
                         bias.data(), 1, rows, width);
  EXPECT_EQ(mean16, mean);
  EXPECT_EQ(rstd16, rstd);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out16[i], to_bfloat16(out[i])) << i;
}

TEST(Residual, ForwardAndBackwardIntoBothBranches) {
  auto a = random_floats(B * T * C, 23), b = random_floats(B * T * C, 24);
  const int64_t n = static_cast<int64_t>(a.size());
  std::vector<float> out(n);
  residual_forward(out.data(), a.data(), b.data(), n);
  const Vec ad = to_double(a), bd = to_double(b);
  expect_all_near(out, ref::residual(ad, bd), 1e-7, "out");
  auto g = random_floats(n, 25);
  std::vector<float> da(n, 1.0f), db(n, -1.0f);  // nonzero: must accumulate
  residual_backward(da.data(), db.data(), g.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_FLOAT_EQ(da[i], 1.0f + g[i]);
    EXPECT_FLOAT_EQ(db[i], -1.0f + g[i]);
  }
  std::vector<float> dd(n);
  for (int64_t i = 0; i < n; ++i) dd[i] = da[i] - 1.0f;
  expect_gradient_near([&](const Vec& v) { return dot(g, ref::residual(v, bd)); }, ad, dd, "dinp1");
}

}  // namespace
}  // namespace zerotrain::device::cpu
