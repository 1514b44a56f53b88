// The CUDA kernels' per-element math (device/cuda/element_math.h), checked
// on the host against the CPU code it mirrors: the dtype roundings against
// core/half.h bit for bit over every 16-bit pattern, every rounding tie
// and random fp32 patterns; GELU and SwiGLU against the CPU kernels (which
// use their own exp/tanh, so to their error); the Adam and SGD element
// updates against device::cpu::adam_update / sgd_update bit for bit in
// every mode. Needs no GPU. Build with -ffp-contract=off (as the optimizer
// kernels are): the host side of element_math.h must round each product.
#include "device/cuda/element_math.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/half.h"
#include "device/cpu/kernels/gelu.h"
#include "device/cpu/kernels/swiglu.h"
#include "device/cuda/layer_math.h"
#include "device/cpu/optimizer_kernels.h"
#include "device/device.h"

namespace zerotrain::device::cuda {
namespace {

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

// fp32 patterns that stress narrowing: every bf16 value with the low half
// at and around the tie, every fp16 midpoint and its neighbours (both
// signs), the fp16 overflow and underflow edges, NaNs, infs, subnormals,
// and random patterns (some confined to the fp16 exponent range).
std::vector<uint32_t> rounding_patterns() {
  std::vector<uint32_t> p;
  for (uint32_t hi = 0; hi < 0x10000u; ++hi) {
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
      p.push_back(hi << 16 | lo);
    }
  }
  for (uint32_t h = 0; h < 0x7bffu; ++h) {  // finite fp16 pairs (h, h + 1)
    const float mid = (fp16_bits_to_fp32(static_cast<uint16_t>(h)) +
                       fp16_bits_to_fp32(static_cast<uint16_t>(h + 1))) /
                      2.0f;  // exact
    for (int d = -2; d <= 2; ++d) {
      const uint32_t x = bits(mid) + static_cast<uint32_t>(d);
      p.push_back(x);
      p.push_back(x | 0x80000000u);
    }
  }
  for (float edge :
       {65504.0f, 65519.99f, 65520.0f, 65536.0f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f, 0x1p-14f,
        0x1.ffcp-15f, std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
        std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::infinity()}) {
    for (int d = -2; d <= 2; ++d) {
      p.push_back(bits(edge) + static_cast<uint32_t>(d));
      p.push_back((bits(edge) + static_cast<uint32_t>(d)) | 0x80000000u);
    }
  }
  for (uint32_t nan : {0x7f800001u, 0x7fc00000u, 0x7fffffffu, 0x7fa5a5a5u, 0x7f802000u}) {
    p.push_back(nan);
    p.push_back(nan | 0x80000000u);
  }
  std::mt19937 rng(7);
  for (int i = 0; i < (1 << 20); ++i) p.push_back(rng());
  for (int i = 0; i < (1 << 20); ++i) {  // exponents 100..143: fp16's range and its edges
    const uint32_t exp = 100u + rng() % 44u;
    p.push_back((rng() & 0x807fffffu) | exp << 23);
  }
  return p;
}

TEST(ElementMath, Bf16RoundingMatchesHalfH) {
  for (uint32_t x : rounding_patterns()) {
    const float f = std::bit_cast<float>(x);
    ASSERT_EQ(bf16_round_bits(f), fp32_to_bf16_bits(f)) << std::hex << x;
    ASSERT_EQ(bits(round_bf16(f)), bits(bf16_bits_to_fp32(fp32_to_bf16_bits(f)))) << std::hex << x;
    ASSERT_EQ(bits(Bf16Elem::round(f)), bits(round_bf16(f))) << std::hex << x;
  }
}

TEST(ElementMath, Fp16RoundingMatchesHalfH) {
  for (uint32_t x : rounding_patterns()) {
    const float f = std::bit_cast<float>(x);
    ASSERT_EQ(fp16_round_bits(f), fp32_to_fp16_bits(f)) << std::hex << x;
    ASSERT_EQ(bits(Fp16Elem::round(f)), bits(fp16_bits_to_fp32(fp32_to_fp16_bits(f))))
        << std::hex << x;
  }
}

TEST(ElementMath, WideningIsExactForEvery16BitPattern) {
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const auto h = static_cast<uint16_t>(b);
    ASSERT_EQ(bits(bf16_to_float(h)), bits(bf16_bits_to_fp32(h))) << std::hex << b;
    ASSERT_EQ(bits(fp16_to_float(h)), bits(fp16_bits_to_fp32(h))) << std::hex << b;
    ASSERT_EQ(bits(Bf16Elem::load(&h, 0)), bits(bf16_bits_to_fp32(h)));
    ASSERT_EQ(bits(Fp16Elem::load(&h, 0)), bits(fp16_bits_to_fp32(h)));
  }
}

TEST(ElementMath, ElemStoresRoundAsHalfH) {
  for (float f : {0.0f, -0.0f, 1.0f / 3.0f, -65519.0f, 1e-6f, 3.0e38f, -1e-42f}) {
    uint16_t h = 0;
    Bf16Elem::store(&h, 0, f);
    EXPECT_EQ(h, fp32_to_bf16_bits(f)) << f;
    Fp16Elem::store(&h, 0, f);
    EXPECT_EQ(h, fp32_to_fp16_bits(f)) << f;
    float g = 0;
    F32Elem::store(&g, 0, f);
    EXPECT_EQ(bits(F32Elem::load(&g, 0)), bits(f));
    EXPECT_EQ(bits(F32Elem::round(f)), bits(f));
  }
}

TEST(ElementMath, BitCastsAndRoundedArithmeticAreThePlainOperations) {
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.0f, 10.0f);
  for (int i = 0; i < 10000; ++i) {
    const float a = d(rng), b = d(rng);
    EXPECT_EQ(float_bits(a), bits(a));
    EXPECT_EQ(bits(bits_float(bits(a))), bits(a));
    EXPECT_EQ(bits(mul_rn(a, b)), bits(a * b));
    EXPECT_EQ(bits(add_rn(a, b)), bits(a + b));
    EXPECT_EQ(bits(sub_rn(a, b)), bits(a - b));
    EXPECT_EQ(bits(div_rn(a, b)), bits(a / b));
    EXPECT_EQ(bits(sqrt_rn(std::fabs(a))), bits(std::sqrt(std::fabs(a))));
  }
}

// Inputs for the activations: a dense sweep of [-12, 12] and N(0, 3).
std::vector<float> activation_inputs() {
  std::vector<float> x;
  for (int i = -24000; i <= 24000; ++i) x.push_back(static_cast<float>(i) * 0.0005f);
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.0f, 3.0f);
  for (int i = 0; i < 20000; ++i) x.push_back(d(rng));
  for (float e : {0.0f, -0.0f, 1e-30f, -1e-30f, 40.0f, -40.0f, 100.0f, -100.0f}) x.push_back(e);
  return x;
}

// The CPU's fast_tanh is within about 1e-7 of tanhf; GELU scales that
// error by |x| and its slope by x² (the cubic's derivative), and neither
// is small next to GELU's tiny values at x < -4. The bound: that, plus a
// few fp32 ulps of the value.
double tanh_error_bound(float x, bool slope) {
  const double a = std::fabs(x);
  return slope ? 1e-6 * (1.0 + a * a) : 4e-7 * (1.0 + a);
}

void expect_near_elementwise(const std::vector<float>& got, const std::vector<float>& ref,
                             const std::vector<float>& x, bool slope, const char* what) {
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = tanh_error_bound(x[i], slope) + 4e-7 * std::fabs(ref[i]);
    ASSERT_NEAR(got[i], ref[i], tol) << what << " at x = " << x[i];
  }
}

TEST(ElementMath, GeluMatchesTheCpuKernel) {
  const std::vector<float> x = activation_inputs();
  const auto n = static_cast<int64_t>(x.size());
  std::vector<float> ref(x.size()), got(x.size());
  cpu::gelu_forward(ref.data(), x.data(), n);
  for (size_t i = 0; i < x.size(); ++i) got[i] = gelu_tanh(x[i]);
  expect_near_elementwise(got, ref, x, false, "gelu");

  const std::vector<float> ones(x.size(), 1.0f);
  cpu::gelu_backward(ref.data(), x.data(), ones.data(), n, /*accumulate=*/false);
  for (size_t i = 0; i < x.size(); ++i) got[i] = gelu_slope(x[i]);
  expect_near_elementwise(got, ref, x, true, "gelu slope");
}

TEST(ElementMath, GeluBf16RoundsWhereTheCpuKernelDoes) {
  const std::vector<float> xf = activation_inputs();
  std::vector<BFloat16> x(xf.size()), ref(xf.size()), dref(xf.size());
  std::vector<float> dout(xf.size());
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (size_t i = 0; i < xf.size(); ++i) {
    x[i] = to_bfloat16(xf[i]);
    dout[i] = d(rng);
  }
  const auto n = static_cast<int64_t>(x.size());
  cpu::gelu_forward_bf16(ref.data(), x.data(), n);
  cpu::gelu_backward_bf16(dref.data(), x.data(), dout.data(), n);
  // The fp32 values differ by the tanh error (above), so the bf16 results
  // agree to it and to one bf16 ulp at a rounding boundary; where GELU is
  // well conditioned (|x| < 3) they are almost always the same bits.
  int64_t differ = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float xi = bf16_to_float(x[i].bits);
    const uint16_t y = bf16_round_bits(gelu_tanh(xi));
    const uint16_t dy = bf16_round_bits(mul_rn(gelu_slope(xi), dout[i]));
    const float gy = bf16_to_float(y), wy = bf16_to_float(ref[i].bits);
    ASSERT_NEAR(gy, wy, tanh_error_bound(xi, false) + 0x1p-7 * std::fabs(wy)) << "x = " << xi;
    const float gd = bf16_to_float(dy), wd = bf16_to_float(dref[i].bits);
    ASSERT_NEAR(gd, wd, tanh_error_bound(xi, true) * std::fabs(dout[i]) + 0x1p-7 * std::fabs(wd))
        << "x = " << xi;
    if (std::fabs(xi) < 3.0f) differ += (y != ref[i].bits) + (dy != dref[i].bits);
  }
  EXPECT_LE(differ, n / 1000) << "bf16 results that differ where |x| < 3";
}

TEST(ElementMath, SwigluMatchesTheCpuKernel) {
  const std::vector<float> g = activation_inputs();
  const auto n = static_cast<int64_t>(g.size());
  std::vector<float> up(g.size()), dout(g.size());
  std::mt19937 rng(9);
  std::normal_distribution<float> d(0.0f, 2.0f);
  for (size_t i = 0; i < g.size(); ++i) {
    up[i] = d(rng);
    dout[i] = d(rng);
  }
  std::vector<float> out(g.size()), dgate(g.size()), dup(g.size());
  cpu::swiglu_forward(out.data(), g.data(), up.data(), n);
  cpu::swiglu_backward(dgate.data(), dup.data(), dout.data(), g.data(), up.data(), n);
  // Same expression on the same exp (the CPU's fast_exp, layer_math.h's
  // cephes_exp): a few ulps at most (the CPU compiler may fuse a multiply
  // and an add).
  for (size_t i = 0; i < g.size(); ++i) {
    const SwigluGrads gr = swiglu_grads(dout[i], g[i], up[i]);
    const auto near = [](float got, float want) {
      return std::fabs(got - want) <= 4e-7f * std::fabs(want) + 1e-30f;
    };
    ASSERT_TRUE(near(swiglu(g[i], up[i]), out[i])) << "swiglu at g = " << g[i];
    // slope = 1 + g·(1 − σ) cancels near g ≈ −1.28, and 1 − σ for large g:
    // a few ulps of the terms, not of the result (the CPU compiler fuses
    // multiply-adds, so σ may differ by an ulp of 1, 2^-23, and g·(1 − σ)
    // by |g| of that).
    const float sig = 1.0f / (1.0f + std::exp(-g[i]));
    const float lead = std::fabs(dout[i] * up[i] * sig);
    const float bound = 4e-7f * (std::fabs(dgate[i]) + lead * (1.0f + std::fabs(g[i] * (1 - sig)))) +
                        lead * std::fabs(g[i]) * 0x1p-21f;
    ASSERT_LE(std::fabs(gr.dgate - dgate[i]), bound) << "dgate at g = " << g[i];
    ASSERT_TRUE(near(gr.dup, dup[i])) << "dup at g = " << g[i];
  }
}

TEST(ElementMath, AxpyIsBitIdenticalToTheHostOps) {
  std::mt19937 rng(13);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> y(4097), x(4097);
  for (size_t i = 0; i < y.size(); ++i) {
    y[i] = d(rng);
    x[i] = d(rng);
  }
  std::vector<float> ref = y;
  ASSERT_TRUE(host_ops().axpy(ref.data(), 0.37f, x.data(), static_cast<int64_t>(x.size())).ok());
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_EQ(bits(axpy_element(y[i], 0.37f, x[i])), bits(ref[i]));
}

// ---- Optimizers ----

struct AdamMode {
  const char* name;
  bool decoupled, l2_mode;
  float grad_scale;
};

AdamStep adam_step(const AdamMode& m) {
  const float lr = 1e-3f, wd = 0.1f, beta1 = 0.9f, beta2 = 0.999f;
  const int t = 7;
  AdamStep s{};
  s.beta1 = beta1;
  s.beta2 = beta2;
  s.one_minus_beta1 = 1.0f - beta1;
  s.one_minus_beta2 = 1.0f - beta2;
  s.eps = 1e-8f;
  s.step_size = lr / (1.0f - std::pow(beta1, static_cast<float>(t)));
  s.bc2_rsqrt = 1.0f / std::sqrt(1.0f - std::pow(beta2, static_cast<float>(t)));
  s.decay = 1.0f - lr * wd;
  s.l2 = wd;
  s.decoupled = m.decoupled;
  s.l2_mode = m.l2_mode;
  s.grad_scale = m.grad_scale;
  return s;
}

// Grads as bits of dtype (fp32 as its own bits), from N(0, 1)·scale.
std::vector<uint32_t> grad_words(DType dtype, size_t n, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<uint32_t> w(n);
  for (uint32_t& x : w) {
    const float g = d(rng) * 0.01f;
    x = dtype == DType::kFloat32   ? bits(g)
        : dtype == DType::kFloat16 ? fp32_to_fp16_bits(g)
                                   : fp32_to_bf16_bits(g);
  }
  return w;
}

float load_grad(DType dtype, const void* grads, size_t i) {
  if (dtype == DType::kFloat32) return F32Elem::load(static_cast<const float*>(grads), i);
  const auto* h = static_cast<const uint16_t*>(grads);
  return dtype == DType::kFloat16 ? Fp16Elem::load(h, i) : Bf16Elem::load(h, i);
}

TEST(ElementMath, AdamElementIsBitIdenticalToTheCpuInEveryMode) {
  const AdamMode modes[] = {{"adamw", true, false, 1.0f},  {"adamw scaled", true, false, 0.37f},
                            {"l2", false, true, 1.0f},     {"l2 scaled", false, true, 0.37f},
                            {"plain", false, false, 1.0f}, {"plain scaled", false, false, 0.37f}};
  const size_t n = 70001;  // more than one CPU chunk (64 Ki), odd
  std::mt19937 rng(17);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (const AdamMode& mode : modes) {
    const AdamStep step = adam_step(mode);
    for (DType grad_dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      for (int copy_kind = 0; copy_kind < 3; ++copy_kind) {  // none, fp16, bf16
        const DType copy_dtype = copy_kind == 1 ? DType::kFloat16 : DType::kBFloat16;
        std::vector<uint32_t> words = grad_words(grad_dtype, n, rng);
        std::vector<uint16_t> g16(words.begin(), words.end());
        const void* grads = grad_dtype == DType::kFloat32 ? static_cast<const void*>(words.data())
                                                          : static_cast<const void*>(g16.data());
        std::vector<float> p(n), m(n), v(n);
        for (size_t i = 0; i < n; ++i) {
          p[i] = d(rng);
          m[i] = d(rng) * 0.01f;
          v[i] = std::fabs(d(rng)) * 1e-4f;
        }
        std::vector<float> p_ref = p, m_ref = m, v_ref = v;
        std::vector<uint16_t> copy_ref(n, 0);
        cpu::adam_update(step, p_ref.data(), grads, grad_dtype, m_ref.data(), v_ref.data(),
                         copy_kind == 0 ? nullptr : copy_ref.data(), copy_dtype, n);
        for (size_t i = 0; i < n; ++i) {
          const AdamState s =
              adam_element(step, load_grad(grad_dtype, grads, i), {p[i], m[i], v[i]});
          ASSERT_EQ(bits(s.param), bits(p_ref[i])) << mode.name << " param " << i;
          ASSERT_EQ(bits(s.exp_avg), bits(m_ref[i])) << mode.name << " exp_avg " << i;
          ASSERT_EQ(bits(s.exp_avg_sq), bits(v_ref[i])) << mode.name << " exp_avg_sq " << i;
          if (copy_kind != 0) {
            const uint16_t c = copy_kind == 1 ? fp16_round_bits(s.param) : bf16_round_bits(s.param);
            ASSERT_EQ(c, copy_ref[i]) << mode.name << " copy " << i;
          }
        }
      }
    }
  }
}

TEST(ElementMath, SgdElementIsBitIdenticalToTheCpuInEveryMode) {
  const size_t n = 70001;
  std::mt19937 rng(19);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (int mask = 0; mask < 32; ++mask) {
    SgdStep s{};
    s.lr = 0.05f;
    s.use_momentum = mask & 1;
    s.first = mask & 2;
    s.nesterov = mask & 4;
    s.weight_decay = (mask & 8) ? 0.01f : 0.0f;
    s.grad_scale = (mask & 16) ? 0.37f : 1.0f;
    s.momentum = 0.9f;
    s.dampening_complement = 0.9f;
    std::vector<float> p(n), g(n), buf(n);
    for (size_t i = 0; i < n; ++i) {
      p[i] = d(rng);
      g[i] = d(rng);
      buf[i] = d(rng);
    }
    std::vector<float> p_ref = p, buf_ref = buf;
    cpu::sgd_update(s, p_ref.data(), g.data(), s.use_momentum ? buf_ref.data() : nullptr, n);
    for (size_t i = 0; i < n; ++i) {
      float b = buf[i];
      const float q = sgd_element(s, p[i], g[i], s.use_momentum ? &b : nullptr);
      ASSERT_EQ(bits(q), bits(p_ref[i])) << "mode " << mask << " at " << i;
      ASSERT_EQ(bits(b), bits(buf_ref[i])) << "mode " << mask << " at " << i;
    }
  }
}

}  // namespace
}  // namespace zerotrain::device::cuda
