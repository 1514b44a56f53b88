// The attention's bf16 forms against a double reference that rounds to
// bf16 exactly where autocast does (att before att·v and attᵀ·dy, d
// preatt before dq and dk; dout comes in bf16, out and dqkv leave rounded),
// with the att-keeping and the lse-keeping pairs, over two row blocks and
// three heads; and against the same reference without the inner rounding,
// which they must not match (so the rounding is really there). Plus their
// argument checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "device/cpu/kernels/ops.h"
#include "device/cpu/kernels/reference.h"

namespace zerotrain::device::cpu {
namespace {

using testing::random_floats;
using Vec = std::vector<double>;

double bf16(double x) { return to_float(to_bfloat16(static_cast<float>(x))); }

struct Reference {
  Vec out, att, lse, dqkv;
};

// Straight from the formulas, per (b, head), in double; `round` applies
// autocast's bf16 rounding points. dqkv is the gradient of Σ g·out. first
// ([B,T], empty: 0): query t sees keys first[t] .. t (packed documents,
// sliding windows).
Reference reference(const std::vector<float>& qkv, const std::vector<float>& g, int B, int T, int C,
                    int NH, bool round, const std::vector<int32_t>& first = {}) {
  const int hs = C / NH;
  const double scale = 1.0f / std::sqrt(static_cast<float>(hs));  // the kernels' fp32 scale
  auto r16 = [round](double x) { return round ? bf16(x) : x; };
  Reference r{Vec(B * T * C, 0.0), Vec(B * NH * T * T, 0.0), Vec(B * NH * T, 0.0),
              Vec(B * T * 3 * C, 0.0)};
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h) {
      auto at = [&](int t, int part, int k) {
        return qkv[(b * T + t) * 3 * C + part * C + h * hs + k];
      };
      auto dq = [&](int t, int part, int k) -> double& {
        return r.dqkv[(b * T + t) * 3 * C + part * C + h * hs + k];
      };
      double* att = r.att.data() + (b * NH + h) * T * T;
      Vec p16(T * T, 0.0), dy16(T * hs), dp(T * T, 0.0);
      auto lo = [&](int t) { return first.empty() ? 0 : first[b * T + t]; };
      for (int t = 0; t < T; ++t) {
        double mx = -1e300;
        std::vector<double> s(t + 1);
        for (int j = lo(t); j <= t; ++j) {
          double acc = 0;
          for (int k = 0; k < hs; ++k) acc += at(t, 0, k) * at(j, 1, k);
          s[j] = scale * acc;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (int j = lo(t); j <= t; ++j) sum += std::exp(s[j] - mx);
        r.lse[(b * NH + h) * T + t] = mx + std::log(sum);
        for (int j = lo(t); j <= t; ++j) {
          att[t * T + j] = std::exp(s[j] - mx) / sum;
          p16[t * T + j] = r16(att[t * T + j]);
        }
        for (int k = 0; k < hs; ++k) {
          double acc = 0;
          for (int j = lo(t); j <= t; ++j) acc += p16[t * T + j] * at(j, 2, k);
          r.out[(b * T + t) * C + h * hs + k] = acc;
          dy16[t * hs + k] = r16(g[(b * T + t) * C + h * hs + k]);
        }
      }
      for (int t = 0; t < T; ++t) {
        double dot = 0;
        for (int j = lo(t); j <= t; ++j) {
          double acc = 0;
          for (int k = 0; k < hs; ++k) {
            acc += dy16[t * hs + k] * at(j, 2, k);
            dq(j, 2, k) += p16[t * T + j] * dy16[t * hs + k];
          }
          dp[t * T + j] = acc;
          dot += att[t * T + j] * acc;
        }
        for (int j = lo(t); j <= t; ++j) {
          const double ds = r16(att[t * T + j] * (dp[t * T + j] - dot));
          for (int k = 0; k < hs; ++k) {
            dq(t, 0, k) += scale * ds * at(j, 1, k);
            dq(j, 1, k) += scale * ds * at(t, 0, k);
          }
        }
      }
    }
  return r;
}

// How many of got[i] are off want[i] by more than tol·(1 + |want[i]|).
int count_off(const std::vector<float>& got, const Vec& want, double tol) {
  EXPECT_EQ(got.size(), want.size());
  int off = 0;
  for (size_t i = 0; i < got.size(); ++i)
    off += std::fabs(got[i] - want[i]) > tol * (1 + std::fabs(want[i]));
  return off;
}

// How many of the bf16 outputs differ from want rounded to bf16.
int count_unequal(const std::vector<BFloat16>& got, const Vec& want) {
  EXPECT_EQ(got.size(), want.size());
  int off = 0;
  for (size_t i = 0; i < got.size(); ++i) off += got[i] != to_bfloat16(static_cast<float>(want[i]));
  return off;
}

// The kernels' bf16 outputs are their fp32 sums rounded once: equal to the
// double reference rounded to bf16 but for at most 1% (a sum within fp32
// accumulation error of a bf16 rounding boundary may round the other way),
// and every one within half a bf16 step (2^-8 relative) plus that error.
void expect_rounded_like(const std::vector<BFloat16>& got, const Vec& want, const char* what) {
  EXPECT_LE(count_unequal(got, want), static_cast<int>(got.size() / 100)) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = to_float(got[i]);
    ASSERT_LE(std::fabs(g - want[i]), std::ldexp(std::fabs(want[i]), -8) + 1e-5)
        << what << " element " << i;
  }
}

TEST(AttentionBf16, RoundsWhereAutocastRoundsWithAttAndLsePairs) {
  constexpr int B = 2, T = 70, C = 12, NH = 3;  // two row blocks (64 + 6)
  const auto wide = random_floats(B * T * 3 * C, 13);
  std::vector<BFloat16> bits(wide.size());
  std::vector<float> qkv(wide.size());  // the bf16 values, exactly
  for (size_t i = 0; i < wide.size(); ++i) {
    bits[i] = to_bfloat16(wide[i]);
    qkv[i] = to_float(bits[i]);
  }
  const auto wide_g = random_floats(B * T * C, 14);
  std::vector<BFloat16> g16(wide_g.size());
  std::vector<float> g(wide_g.size());  // dout comes in bf16
  for (size_t i = 0; i < wide_g.size(); ++i) {
    g16[i] = to_bfloat16(wide_g[i]);
    g[i] = to_float(g16[i]);
  }
  const Reference want = reference(qkv, g, B, T, C, NH, /*round=*/true);
  const Reference unrounded = reference(qkv, g, B, T, C, NH, /*round=*/false);

  std::vector<BFloat16> out(B * T * C), d_att(B * T * 3 * C, BFloat16{0x7fc0});  // NaN: overwritten
  std::vector<float> att(B * NH * T * T), lse(B * NH * T);
  ASSERT_TRUE(
      attention_forward_bf16(out.data(), att.data(), nullptr, bits.data(), B, T, C, NH).ok());
  EXPECT_EQ(count_off(att, want.att, 1e-5), 0);  // softmax is fp32: nothing rounded
  expect_rounded_like(out, want.out, "out (att kept)");
  ASSERT_TRUE(attention_backward_bf16(d_att.data(), g16.data(), bits.data(), att.data(), nullptr, B,
                                      T, C, NH)
                  .ok());
  expect_rounded_like(d_att, want.dqkv, "dqkv (att kept)");

  std::fill(out.begin(), out.end(), BFloat16{0});
  ASSERT_TRUE(
      attention_forward_bf16(out.data(), nullptr, lse.data(), bits.data(), B, T, C, NH).ok());
  EXPECT_EQ(count_off(lse, want.lse, 1e-5), 0);
  expect_rounded_like(out, want.out, "out (lse kept)");
  std::vector<BFloat16> d_lse(B * T * 3 * C, BFloat16{0x7fc0});
  ASSERT_TRUE(attention_backward_bf16(d_lse.data(), g16.data(), bits.data(), nullptr, lse.data(), B,
                                      T, C, NH)
                  .ok());
  expect_rounded_like(d_lse, want.dqkv, "dqkv (lse kept)");

  // Without autocast's rounding points inside, many outputs would round
  // to other bf16 values (measured: 36% of out, 41% of dqkv; 0-1% with).
  EXPECT_GT(count_unequal(out, unrounded.out), static_cast<int>(out.size() / 10));
  EXPECT_GT(count_unequal(d_lse, unrounded.dqkv), static_cast<int>(d_lse.size() / 10));
}

// With first keys (a sliding window of 5 in row 0; in row 1 packed
// documents restarting at 30 and 100): the same rounding points over the
// masked sums, for both pairs. T = 150 is three row blocks, and the lse
// pair's later blocks start at their earliest first key (c0 > 0), so the
// skipped keys are checked too.
TEST(AttentionBf16, FirstKeysMaskAsTheReferenceWithAttAndLsePairs) {
  constexpr int B = 2, T = 150, C = 8, NH = 2;
  std::vector<int32_t> first(B * T);
  for (int t = 0; t < T; ++t) {
    first[t] = std::max(0, t - 4);
    first[T + t] = t >= 100 ? 100 : t >= 30 ? 30 : 0;
  }
  const auto wide = random_floats(B * T * 3 * C, 23);
  std::vector<BFloat16> bits(wide.size());
  std::vector<float> qkv(wide.size());
  for (size_t i = 0; i < wide.size(); ++i) {
    bits[i] = to_bfloat16(wide[i]);
    qkv[i] = to_float(bits[i]);
  }
  const auto wide_g = random_floats(B * T * C, 24);
  std::vector<BFloat16> g16(wide_g.size());
  std::vector<float> g(wide_g.size());
  for (size_t i = 0; i < wide_g.size(); ++i) {
    g16[i] = to_bfloat16(wide_g[i]);
    g[i] = to_float(g16[i]);
  }
  const Reference want = reference(qkv, g, B, T, C, NH, /*round=*/true, first);
  const Reference causal = reference(qkv, g, B, T, C, NH, /*round=*/true);
  for (bool keep_att : {true, false}) {
    SCOPED_TRACE(keep_att ? "att kept" : "lse kept");
    std::vector<float> att(B * NH * T * T), lse(B * NH * T);
    float* a = keep_att ? att.data() : nullptr;
    float* l = keep_att ? nullptr : lse.data();
    std::vector<BFloat16> out(B * T * C), d(B * T * 3 * C, BFloat16{0x7fc0});
    ASSERT_TRUE(
        attention_forward_bf16(out.data(), a, l, bits.data(), B, T, C, NH, first.data()).ok());
    if (keep_att) EXPECT_EQ(count_off(att, want.att, 1e-5), 0);
    if (!keep_att) EXPECT_EQ(count_off(lse, want.lse, 1e-5), 0);
    expect_rounded_like(out, want.out, "out");
    ASSERT_TRUE(
        attention_backward_bf16(d.data(), g16.data(), bits.data(), a, l, B, T, C, NH, first.data())
            .ok());
    expect_rounded_like(d, want.dqkv, "dqkv");
    // The mask is real: the plain causal attention differs almost everywhere.
    EXPECT_GT(count_unequal(out, causal.out), static_cast<int>(out.size() / 2));
  }
}

TEST(AttentionBf16, RefusesBothOrNeitherOfAttAndLse) {
  constexpr int B = 1, T = 4, C = 8, NH = 2;
  std::vector<BFloat16> qkv(B * T * 3 * C, to_bfloat16(0.5f));
  std::vector<BFloat16> out(B * T * C), d(B * T * 3 * C);
  std::vector<float> att(B * NH * T * T), lse(B * NH * T);
  for (bool keep_att : {false, true}) {
    float* a = keep_att ? att.data() : nullptr;
    float* l = keep_att ? lse.data() : nullptr;
    EXPECT_EQ(attention_forward_bf16(out.data(), a, l, qkv.data(), B, T, C, NH).code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(attention_backward_bf16(d.data(), out.data(), qkv.data(), a, l, B, T, C, NH).code(),
              StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(attention_forward_bf16(out.data(), att.data(), nullptr, qkv.data(), B, T, 9, NH).code(),
            StatusCode::kInvalidArgument);  // C not a multiple of NH
}

}  // namespace
}  // namespace zerotrain::device::cpu
