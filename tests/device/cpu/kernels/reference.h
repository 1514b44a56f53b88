// Test helpers for the CPU kernels: seeded random inputs, double-precision
// reference forwards of every op (naive loops, written from the formulas,
// sharing no code with src/kernels), and a central-finite-difference
// gradient check in double precision.
//
//   auto f = [&](const Vec& x) { return dot(w, ref::gelu(x)); };
//   expect_gradient_near(f, to_double(inp), analytic_dinp, "gelu dinp");
//
// Thread-safety: test code, single-threaded.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace zerotrain::device::cpu::testing {

using Vec = std::vector<double>;

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

inline Vec to_double(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

inline double dot(const std::vector<float>& w, const Vec& x) {
  double s = 0.0;
  for (size_t i = 0; i < x.size(); ++i) s += static_cast<double>(w[i]) * x[i];
  return s;
}

// Central differences of f at x, in double with step h, compared against
// the fp32 analytic gradient: |analytic - numeric| <= rtol·|numeric| +
// atol·max|numeric| (atol relative to the gradient's scale).
inline void expect_gradient_near(const std::function<double(const Vec&)>& f, Vec x,
                                 const std::vector<float>& analytic, const std::string& what,
                                 double rtol = 1e-3, double atol = 1e-4, double h = 1e-5) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  Vec numeric(x.size());
  double scale = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    x[i] = x0 + h;
    const double fp = f(x);
    x[i] = x0 - h;
    const double fm = f(x);
    x[i] = x0;
    numeric[i] = (fp - fm) / (2.0 * h);
    scale = std::max(scale, std::fabs(numeric[i]));
  }
  ASSERT_GT(scale, 0.0) << what << ": gradient is identically zero, the check would be vacuous";
  int bad = 0;
  for (size_t i = 0; i < x.size() && bad < 5; ++i) {
    const double tol = rtol * std::fabs(numeric[i]) + atol * scale;
    if (std::fabs(analytic[i] - numeric[i]) > tol) {
      ++bad;
      ADD_FAILURE() << what << "[" << i << "]: analytic " << analytic[i] << " vs numeric "
                    << numeric[i] << " (tol " << tol << ")";
    }
  }
}

// Forward values: |got - want| <= tol·(1 + |want|).
inline void expect_all_near(const std::vector<float>& got, const Vec& want, double tol,
                            const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    if (std::fabs(got[i] - want[i]) > tol * (1.0 + std::fabs(want[i]))) {
      ++bad;
      ADD_FAILURE() << what << "[" << i << "]: " << got[i] << " vs reference " << want[i];
    }
  }
}

namespace ref {

// out[b,t,:] = wte[tok[b,t],:] + wpe[t,:]
inline Vec encoder(const std::vector<int32_t>& tok, const Vec& wte, const Vec& wpe, int B, int T,
                   int C) {
  Vec out(static_cast<size_t>(B) * T * C);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < C; ++c)
        out[(b * T + t) * C + c] = wte[tok[b * T + t] * C + c] + wpe[t * C + c];
  return out;
}

inline Vec layernorm(const Vec& x, const Vec& w, const Vec& bias, int rows, int C) {
  Vec out(x.size());
  for (int r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int c = 0; c < C; ++c) m += x[r * C + c];
    m /= C;
    for (int c = 0; c < C; ++c) v += (x[r * C + c] - m) * (x[r * C + c] - m);
    v /= C;
    const double s = 1.0 / std::sqrt(v + 1e-5);
    for (int c = 0; c < C; ++c) out[r * C + c] = (x[r * C + c] - m) * s * w[c] + bias[c];
  }
  return out;
}

// out[r,o] = Σ_c x[r,c]·w[o,c] + bias[o]; bias may be empty.
inline Vec linear(const Vec& x, const Vec& w, const Vec& bias, int rows, int C, int OC) {
  Vec out(static_cast<size_t>(rows) * OC);
  for (int r = 0; r < rows; ++r)
    for (int o = 0; o < OC; ++o) {
      double s = bias.empty() ? 0.0 : bias[o];
      for (int c = 0; c < C; ++c) s += x[r * C + c] * w[o * C + c];
      out[r * OC + o] = s;
    }
  return out;
}

inline Vec gelu(const Vec& x) {
  Vec out(x.size());
  const double k = std::sqrt(2.0 / M_PI);
  for (size_t i = 0; i < x.size(); ++i)
    out[i] = 0.5 * x[i] * (1.0 + std::tanh(k * (x[i] + 0.044715 * x[i] * x[i] * x[i])));
  return out;
}

inline Vec residual(const Vec& a, const Vec& b) {
  Vec out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
  return out;
}

// Causal attention from qkv [B,T,3C] to out [B,T,C], straight from the
// formula; query t sees keys first[b,t] .. t (first null: 0 .. t).
inline Vec attention(const Vec& qkv, int B, int T, int C, int NH,
                     const int32_t* first = nullptr) {
  const int hs = C / NH;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  Vec out(static_cast<size_t>(B) * T * C, 0.0);
  std::vector<double> p(T);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        const double* q = &qkv[(b * T + t) * 3 * C + h * hs];
        const int lo = first ? first[b * T + t] : 0;
        double maxv = -1e300, sum = 0;
        for (int j = lo; j <= t; ++j) {
          const double* k = &qkv[(b * T + j) * 3 * C + C + h * hs];
          double s = 0;
          for (int i = 0; i < hs; ++i) s += q[i] * k[i];
          p[j] = s * scale;
          maxv = std::max(maxv, p[j]);
        }
        for (int j = lo; j <= t; ++j) sum += (p[j] = std::exp(p[j] - maxv));
        for (int j = lo; j <= t; ++j) {
          const double* v = &qkv[(b * T + j) * 3 * C + 2 * C + h * hs];
          for (int i = 0; i < hs; ++i) out[(b * T + t) * C + h * hs + i] += p[j] / sum * v[i];
        }
      }
  return out;
}

// Per-token losses over logits [rows, Vp] with V valid columns; target < 0 gives 0.
inline Vec crossentropy(const Vec& logits, const std::vector<int32_t>& targets, int rows, int V,
                        int Vp) {
  Vec out(rows, 0.0);
  for (int r = 0; r < rows; ++r) {
    if (targets[r] < 0) continue;
    double maxv = -1e300, sum = 0;
    for (int v = 0; v < V; ++v) maxv = std::max(maxv, logits[r * Vp + v]);
    for (int v = 0; v < V; ++v) sum += std::exp(logits[r * Vp + v] - maxv);
    out[r] = maxv + std::log(sum) - logits[r * Vp + targets[r]];
  }
  return out;
}

}  // namespace ref
}  // namespace zerotrain::device::cpu::testing
