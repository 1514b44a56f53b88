// The memory-wide element ops, the optimizers and the element-wise layers
// on every built device against the CPU's: conversions, add, rounding,
// scale, the wire's in-place narrowing/widening, Adam and SGD bit for bit
// (the CUDA kernels round every operation as the CPU does); the sum of
// squares within 1e-12 and the same on every call; GELU and SwiGLU within
// 1e-5 (1e-2 with bf16 outputs: the device's tanh is not the CPU's).
// Sizes 0, 1, odd, and past 1 Mi elements where cheap.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/half.h"
#include "device/conformance/ops_fixture.h"

namespace zerotrain::device::testing {
namespace {

constexpr DType kDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
constexpr size_t kSizes[] = {0, 1, 7, 4097, (size_t{1} << 20) + 3};

// Raw element bytes as 16-bit words (an fp32 element is two).
using Words = std::vector<uint16_t>;

size_t word_count(DType d, size_t n) { return n * dtype_size(d) / 2; }

template <typename T>
Words words_of(const std::vector<T>& v) {
  Words w(v.size() * sizeof(T) / 2);
  if (!v.empty()) std::memcpy(w.data(), v.data(), v.size() * sizeof(T));
  return w;
}

// n finite random values of dtype (N(0, scale)), as words.
Words random_words(DType d, size_t n, uint64_t seed, float scale = 1.0f) {
  const std::vector<float> v = randn(n, seed, scale);
  if (d == DType::kFloat32) return words_of(v);
  Words w(n);
  for (size_t i = 0; i < n; ++i) {
    w[i] = d == DType::kFloat16 ? fp32_to_fp16_bits(v[i]) : fp32_to_bf16_bits(v[i]);
  }
  return w;
}

// Puts NaNs, infinities, signed zeros, subnormals and rounding ties at the
// front of w (as many as fit), for the conversions (pure bit operations).
void add_specials(DType d, Words& w) {
  if (d == DType::kFloat32) {
    const uint32_t specials[] = {0x7fc00000u, 0xffa00001u, 0x7f800001u, 0x7f800000u, 0xff800000u,
                                 0x80000000u, 0x00000001u, 0x807fffffu, 0x477ff000u, 0x477fefffu,
                                 0x33000000u, 0x3f808000u, 0x3f818000u, 0x387fe000u};
    for (size_t i = 0; i < std::size(specials) && 2 * i + 1 < w.size(); ++i) {
      std::memcpy(&w[2 * i], &specials[i], 4);
    }
    return;
  }
  const uint16_t specials[] = {0x7c00u, 0xfc00u, 0x7e01u, 0xfd55u, 0x8000u, 0x0001u,
                               0x83ffu, 0x7f80u, 0xff81u, 0x7fffu, 0x0080u};
  for (size_t i = 0; i < std::size(specials) && i < w.size(); ++i) w[i] = specials[i];
}

// Equal bits, naming the first differing word.
void expect_same_words(const Words& got, const Words& ref, const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != ref[i]) {
      ADD_FAILURE() << what << ": word " << i << " is 0x" << std::hex << got[i] << ", expected 0x"
                    << ref[i];
      return;
    }
  }
}
void expect_same_bits(const std::vector<float>& got, const std::vector<float>& ref,
                      const std::string& what) {
  expect_same_words(words_of(got), words_of(ref), what);
}

std::string name_of(DType d) { return std::string(dtype_name(d)); }

struct AdamMode {
  const char* name;
  bool decoupled, l2_mode;
  float grad_scale;
};

AdamStep adam_step(const AdamMode& m) {
  const float lr = 1e-3f, wd = 0.1f, beta1 = 0.9f, beta2 = 0.999f, t = 5.0f;
  AdamStep s{};
  s.beta1 = beta1;
  s.beta2 = beta2;
  s.one_minus_beta1 = 1.0f - beta1;
  s.one_minus_beta2 = 1.0f - beta2;
  s.eps = 1e-8f;
  s.step_size = lr / (1.0f - std::pow(beta1, t));
  s.bc2_rsqrt = 1.0f / std::sqrt(1.0f - std::pow(beta2, t));
  s.decay = 1.0f - lr * wd;
  s.l2 = wd;
  s.decoupled = m.decoupled;
  s.l2_mode = m.l2_mode;
  s.grad_scale = m.grad_scale;
  return s;
}

class ElementwiseConformance : public OpsConformance {
 protected:
  // n elements of dtype d over the words a holds (device memory).
  static Tensor view(const DeviceArray<uint16_t>& a, DType d, size_t n) {
    return a.buffer().tensor(d, 0, n);
  }
  // The same over host words.
  static Tensor host_view(Words& w, DType d, size_t n) { return Tensor(w.data(), d, n); }

  // One Adam step on the device and on the host from the same state:
  // params, moments and the copy bit for bit.
  void run_adam(const AdamStep& step, DType grad_dtype, int copy_kind, size_t n,
                const std::string& what) {
    const DType copy_dtype = copy_kind == 1 ? DType::kFloat16 : DType::kBFloat16;
    Words grads = random_words(grad_dtype, n, n + 37, 0.01f);
    std::vector<float> p = randn(n, n + 41), m = randn(n, n + 43, 0.01f), v = randn(n, n + 47);
    for (float& x : v) x = x * x * 1e-4f;
    auto dg = upload(grads);
    auto dp = upload(p), dm = upload(m), dv = upload(v);
    auto dcopy = alloc<uint16_t>(n);
    Words copy(n, 0);
    void* dcopy_ptr = copy_kind == 0 ? nullptr : dcopy.ptr();
    void* copy_ptr = copy_kind == 0 ? nullptr : copy.data();
    ASSERT_TRUE(ops()
                    .adam(step, dp.ptr(), dg.ptr(), grad_dtype, dm.ptr(), dv.ptr(), dcopy_ptr,
                          copy_dtype, n)
                    .ok())
        << what;
    ASSERT_TRUE(host()
                    .adam(step, p.data(), grads.data(), grad_dtype, m.data(), v.data(), copy_ptr,
                          copy_dtype, n)
                    .ok());
    expect_same_bits(download(dp), p, what + " params");
    expect_same_bits(download(dm), m, what + " exp_avg");
    expect_same_bits(download(dv), v, what + " exp_avg_sq");
    expect_same_words(download(dcopy), copy, what + " copy");
  }
};

TEST_P(ElementwiseConformance, ConvertEveryDtypePairIsExact) {
  for (size_t n : kSizes)
    for (DType from : kDTypes)
      for (DType to : kDTypes) {
        const std::string what = name_of(from) + " -> " + name_of(to) + " n " + std::to_string(n);
        Words src = random_words(from, n, n + 1, 100.0f);
        add_specials(from, src);
        auto dsrc = upload(src);
        auto ddst = alloc<uint16_t>(word_count(to, n));
        ASSERT_TRUE(ops().convert(view(dsrc, from, n), view(ddst, to, n)).ok()) << what;
        Words ref(word_count(to, n));
        ASSERT_TRUE(host().convert(host_view(src, from, n), host_view(ref, to, n)).ok());
        expect_same_words(download(ddst), ref, what);
      }
}

TEST_P(ElementwiseConformance, ConvertOntoItselfIsANoOpAndSizesMustMatch) {
  Words w = random_words(DType::kFloat32, 4097, 3);
  auto d = upload(w);
  ASSERT_TRUE(ops().convert(view(d, DType::kFloat32, 4097), view(d, DType::kFloat32, 4097)).ok());
  expect_same_words(download(d), w, "fp32 onto itself");
  auto small = alloc<uint16_t>(8);
  const Status s = ops().convert(view(d, DType::kFloat32, 9), view(small, DType::kBFloat16, 8));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
}

TEST_P(ElementwiseConformance, AddRoundsIntoEveryDtype) {
  for (size_t n : kSizes)
    for (DType d : kDTypes) {
      const std::string what = "add into " + name_of(d) + " n " + std::to_string(n);
      Words dst = random_words(d, n, n + 7);
      const std::vector<float> src = randn(n, n + 8, 0.5f);
      auto ddst = upload(dst);
      auto dsrc = upload(src);
      ASSERT_TRUE(ops().add(view(ddst, d, n), dsrc.buffer().tensor(DType::kFloat32, 0, n)).ok());
      ASSERT_TRUE(host().add(host_view(dst, d, n), src).ok());
      expect_same_words(download(ddst), dst, what);
    }
}

TEST_P(ElementwiseConformance, AddNeedsAnFp32SourceOfTheSameLength) {
  auto a = alloc<uint16_t>(16);
  auto b = alloc<uint16_t>(16);
  Status s = ops().add(view(a, DType::kBFloat16, 8), view(b, DType::kBFloat16, 8));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  s = ops().add(view(a, DType::kFloat32, 8), view(b, DType::kFloat32, 7));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
}

TEST_P(ElementwiseConformance, RoundThroughEveryDtypeInPlaceOrNot) {
  for (size_t n : kSizes)
    for (DType d : kDTypes)
      for (bool in_place : {false, true}) {
        const std::string what = "round through " + name_of(d) + (in_place ? " in place" : "");
        Words in = random_words(DType::kFloat32, n, n + 11, 3.0f);
        add_specials(DType::kFloat32, in);
        auto din = upload(in);
        auto dout = in_place ? DeviceArray<uint16_t>() : alloc<uint16_t>(in.size());
        const auto& target = in_place ? din : dout;
        ASSERT_TRUE(
            ops()
                .round_through(d, view(din, DType::kFloat32, n), view(target, DType::kFloat32, n))
                .ok());
        Words ref(in.size());
        ASSERT_TRUE(host()
                        .round_through(d, host_view(in, DType::kFloat32, n),
                                       host_view(ref, DType::kFloat32, n))
                        .ok());
        expect_same_words(download(target), ref, what);
      }
}

TEST_P(ElementwiseConformance, ScaleIsExact) {
  for (size_t n : kSizes) {
    std::vector<float> x = randn(n, n + 13);
    auto dx = upload(x);
    ASSERT_TRUE(ops().scale(dx.buffer().tensor(DType::kFloat32, 0, n), 0.37f).ok());
    ASSERT_TRUE(host().scale(x, 0.37f).ok());
    expect_same_bits(download(dx), x, "scale n " + std::to_string(n));
  }
}

TEST_P(ElementwiseConformance, SumSquaresMatchesTheCpuAndRepeatsExactly) {
  for (size_t n :
       {size_t{0}, size_t{1}, size_t{7}, size_t{32768}, size_t{32769}, (size_t{3} << 20) + 5}) {
    const std::vector<float> x = randn(n, n + 17, 2.0f);
    auto dx = upload(x);
    const ConstTensor t = dx.buffer().tensor(DType::kFloat32, 0, n);
    auto first = ops().sum_squares(t);
    auto second = ops().sum_squares(t);
    auto ref = host().sum_squares(x);
    ASSERT_TRUE(first.ok() && second.ok() && ref.ok());
    EXPECT_NEAR(*first, *ref, 1e-12 * *ref) << "n " << n;
    EXPECT_EQ(std::memcmp(&*first, &*second, sizeof(double)), 0)
        << "n " << n << ": " << *first << " then " << *second;
  }
}

// fp16/bf16 x (a 16-bit gradient accumulator handed to the optimizer):
// each element widened exactly, so the sum is the fp32 widening's, bit for
// bit, on this device and on the CPU.
TEST_P(ElementwiseConformance, SumSquaresOf16BitElementsIsTheirWideningsSum) {
  for (size_t n : {size_t{1}, size_t{7}, size_t{32769}, (size_t{3} << 20) + 5})
    for (DType d : {DType::kFloat16, DType::kBFloat16}) {
      const std::string what = name_of(d) + " n " + std::to_string(n);
      Words w = random_words(d, n, n + 23, 2.0f);
      std::vector<float> wide(n);
      ASSERT_TRUE(host().convert(host_view(w, d, n), Tensor(std::span<float>(wide))).ok());
      auto dw = upload(w);
      auto dwide = upload(wide);
      auto got = ops().sum_squares(view(dw, d, n));
      auto want = ops().sum_squares(dwide.buffer().tensor(DType::kFloat32, 0, n));
      auto cpu = host().sum_squares(host_view(w, d, n));
      ASSERT_TRUE(got.ok() && want.ok() && cpu.ok()) << what << ": " << got.status().to_string();
      EXPECT_EQ(std::memcmp(&*got, &*want, sizeof(double)), 0) << what << ": " << *got << " vs "
                                                               << *want;
      EXPECT_NEAR(*got, *cpu, 1e-12 * *cpu) << what;
    }
}

// The whole fp32 buffer afterwards: the narrowed values in its first
// bytes, the rest untouched.
TEST_P(ElementwiseConformance, NarrowInPlaceEveryWire) {
  for (size_t n : kSizes)
    for (DType wire : kDTypes)
      for (float scale : {1.0f, 0.25f, 3.0f}) {
        const std::string what = "narrow to " + name_of(wire) + " scale " + std::to_string(scale) +
                                 " n " + std::to_string(n);
        Words x = random_words(DType::kFloat32, n, n + 19);
        auto dx = upload(x);
        ASSERT_TRUE(ops().narrow_in_place(view(dx, DType::kFloat32, n), scale, wire).ok()) << what;
        ASSERT_TRUE(host().narrow_in_place(host_view(x, DType::kFloat32, n), scale, wire).ok());
        expect_same_words(download(dx), x, what);
      }
}

// Layouts: a separate fp32 output, the output over the source's own first
// bytes, and the output one float past the source (overlapping it).
TEST_P(ElementwiseConformance, WidenInPlaceEveryWireAndLayout) {
  for (size_t n : kSizes)
    for (DType wire : kDTypes)
      for (int layout = 0; layout < 3; ++layout)
        for (float scale : {1.0f, 0.5f}) {
          if (n > 4097 && scale == 1.0f) continue;  // the large size once per layout
          const std::string what = "widen " + name_of(wire) + " layout " + std::to_string(layout) +
                                   " n " + std::to_string(n);
          // n + 1 floats of room; the wire values at the front.
          Words buf = random_words(DType::kFloat32, n + 1, n + 23);
          const Words wire_values = random_words(wire, n, n + 29);
          std::copy(wire_values.begin(), wire_values.end(), buf.begin());
          Words out = random_words(DType::kFloat32, n, n + 31);
          auto dbuf = upload(buf);
          auto dout = upload(out);
          const size_t dst_word = layout == 2 ? 2 : 0;
          float* ddst = layout == 0 ? reinterpret_cast<float*>(dout.ptr())
                                    : reinterpret_cast<float*>(dbuf.ptr() + dst_word);
          float* hdst = layout == 0 ? reinterpret_cast<float*>(out.data())
                                    : reinterpret_cast<float*>(buf.data() + dst_word);
          ASSERT_TRUE(ops().widen_in_place(dbuf.ptr(), n, wire, scale, ddst).ok()) << what;
          ASSERT_TRUE(host().widen_in_place(buf.data(), n, wire, scale, hdst).ok());
          expect_same_words(download(dbuf), buf, what);
          expect_same_words(download(dout), out, what + " (separate output)");
        }
}

// ---- Optimizers ----

TEST_P(ElementwiseConformance, AdamEveryModeGradDtypeAndCopyIsBitIdentical) {
  const AdamMode modes[] = {{"adamw", true, false, 1.0f},  {"adamw scaled", true, false, 0.37f},
                            {"l2", false, true, 1.0f},     {"l2 scaled", false, true, 0.37f},
                            {"plain", false, false, 1.0f}, {"plain scaled", false, false, 0.37f}};
  for (const AdamMode& mode : modes)
    for (DType grad_dtype : kDTypes)
      for (int copy_kind = 0; copy_kind < 3; ++copy_kind)  // none, fp16, bf16
        for (size_t n : {size_t{0}, size_t{1}, size_t{4097}}) {
          const std::string what = std::string(mode.name) + " grads " + name_of(grad_dtype) +
                                   " copy " + std::to_string(copy_kind) + " n " + std::to_string(n);
          run_adam(adam_step(mode), grad_dtype, copy_kind, n, what);
        }
  run_adam(adam_step(modes[0]), DType::kBFloat16, 2, (size_t{1} << 20) + 3,
           "adamw bf16 grads, bf16 copy, 1 Mi + 3");
}

TEST_P(ElementwiseConformance, SgdEveryModeIsBitIdentical) {
  for (int mask = 0; mask < 32; ++mask)
    for (size_t n : {size_t{1}, size_t{4097}}) {
      SgdStep s{};
      s.lr = 0.05f;
      s.use_momentum = mask & 1;
      s.first = mask & 2;
      s.nesterov = mask & 4;
      s.weight_decay = (mask & 8) ? 0.01f : 0.0f;
      s.grad_scale = (mask & 16) ? 0.37f : 1.0f;
      s.momentum = 0.9f;
      s.dampening_complement = 0.8f;
      std::vector<float> p = randn(n, 41), g = randn(n, 43), buf = randn(n, 47);
      auto dp = upload(p), dg = upload(g), dbuf = upload(buf);
      ASSERT_TRUE(ops().sgd(s, dp.ptr(), dg.ptr(), s.use_momentum ? dbuf.ptr() : nullptr, n).ok());
      ASSERT_TRUE(host().sgd(s, p.data(), g.data(), s.use_momentum ? buf.data() : nullptr, n).ok());
      const std::string what = "sgd mode " + std::to_string(mask) + " n " + std::to_string(n);
      expect_same_bits(download(dp), p, what + " params");
      expect_same_bits(download(dbuf), buf, what + " momentum");
    }
}

// ---- Element-wise layers ----

TEST_P(ElementwiseConformance, GeluForwardAndBackward) {
  for (size_t n : kSizes) {
    const auto N = static_cast<int64_t>(n);
    const std::vector<float> x = randn(n, n + 53, 2.0f), dy = randn(n, n + 59);
    auto dx = upload(x), ddy = upload(dy);
    auto dout = alloc<float>(n);
    ASSERT_TRUE(ops().gelu_forward(dout.ptr(), dx.ptr(), N).ok());
    std::vector<float> ref(n);
    ASSERT_TRUE(host().gelu_forward(ref.data(), x.data(), N).ok());
    expect_close(download(dout), ref, kFp32Tol, "gelu forward n " + std::to_string(n));
    for (bool accumulate : {false, true}) {
      std::vector<float> dinp = randn(n, n + 61);
      auto ddinp = upload(dinp);
      ASSERT_TRUE(ops().gelu_backward(ddinp.ptr(), dx.ptr(), ddy.ptr(), N, accumulate).ok());
      ASSERT_TRUE(host().gelu_backward(dinp.data(), x.data(), dy.data(), N, accumulate).ok());
      expect_close(
          download(ddinp), dinp, kFp32Tol,
          std::string("gelu backward ") + (accumulate ? "+=" : "=") + " n " + std::to_string(n));
    }
  }
}

TEST_P(ElementwiseConformance, GeluBf16ForwardAndBackward) {
  for (size_t n : kSizes) {
    const auto N = static_cast<int64_t>(n);
    const std::vector<BFloat16> x = to_bf16(randn(n, n + 67, 2.0f));
    const std::vector<float> dy = randn(n, n + 71);
    auto dx = upload(x);
    auto ddy = upload(dy);
    auto dout = alloc<BFloat16>(n), ddinp = alloc<BFloat16>(n);
    ASSERT_TRUE(ops().gelu_forward_bf16(dout.ptr(), dx.ptr(), N).ok());
    ASSERT_TRUE(ops().gelu_backward_bf16(ddinp.ptr(), dx.ptr(), ddy.ptr(), N).ok());
    std::vector<BFloat16> ref(n), dref(n);
    ASSERT_TRUE(host().gelu_forward_bf16(ref.data(), x.data(), N).ok());
    ASSERT_TRUE(host().gelu_backward_bf16(dref.data(), x.data(), dy.data(), N).ok());
    expect_close(download(dout), ref, kBf16Tol, "gelu bf16 forward n " + std::to_string(n));
    expect_close(download(ddinp), dref, kBf16Tol, "gelu bf16 backward n " + std::to_string(n));
  }
}

TEST_P(ElementwiseConformance, SwigluForwardAndBackward) {
  for (size_t n : kSizes) {
    const auto N = static_cast<int64_t>(n);
    const std::vector<float> gate = randn(n, n + 73, 3.0f), up = randn(n, n + 79),
                             dy = randn(n, n + 83);
    auto dgate = upload(gate), dup = upload(up), ddy = upload(dy);
    auto dout = alloc<float>(n), ddgate = alloc<float>(n), ddup = alloc<float>(n);
    ASSERT_TRUE(ops().swiglu_forward(dout.ptr(), dgate.ptr(), dup.ptr(), N).ok());
    ASSERT_TRUE(
        ops().swiglu_backward(ddgate.ptr(), ddup.ptr(), ddy.ptr(), dgate.ptr(), dup.ptr(), N).ok());
    std::vector<float> out(n), rgate(n), rup(n);
    ASSERT_TRUE(host().swiglu_forward(out.data(), gate.data(), up.data(), N).ok());
    ASSERT_TRUE(host()
                    .swiglu_backward(rgate.data(), rup.data(), dy.data(), gate.data(), up.data(), N)
                    .ok());
    const std::string sz = " n " + std::to_string(n);
    expect_close(download(dout), out, kFp32Tol, "swiglu forward" + sz);
    expect_close(download(ddgate), rgate, kFp32Tol, "swiglu dgate" + sz);
    expect_close(download(ddup), rup, kFp32Tol, "swiglu dup" + sz);
  }
}

TEST_P(ElementwiseConformance, SwigluBf16ForwardAndBackward) {
  for (size_t n : kSizes) {
    const auto N = static_cast<int64_t>(n);
    const auto gate = to_bf16(randn(n, n + 89, 3.0f)), up = to_bf16(randn(n, n + 97));
    const std::vector<float> dy = randn(n, n + 101);
    auto dgate = upload(gate), dup = upload(up);
    auto ddy = upload(dy);
    auto dout = alloc<BFloat16>(n), ddgate = alloc<BFloat16>(n), ddup = alloc<BFloat16>(n);
    ASSERT_TRUE(ops().swiglu_forward_bf16(dout.ptr(), dgate.ptr(), dup.ptr(), N).ok());
    ASSERT_TRUE(ops()
                    .swiglu_backward_bf16(ddgate.ptr(), ddup.ptr(), ddy.ptr(), dgate.ptr(),
                                          dup.ptr(), N)
                    .ok());
    std::vector<BFloat16> out(n), rgate(n), rup(n);
    ASSERT_TRUE(host().swiglu_forward_bf16(out.data(), gate.data(), up.data(), N).ok());
    ASSERT_TRUE(host()
                    .swiglu_backward_bf16(rgate.data(), rup.data(), dy.data(), gate.data(),
                                          up.data(), N)
                    .ok());
    const std::string sz = " n " + std::to_string(n);
    expect_close(download(dout), out, kBf16Tol, "swiglu bf16 forward" + sz);
    expect_close(download(ddgate), rgate, kBf16Tol, "swiglu bf16 dgate" + sz);
    expect_close(download(ddup), rup, kBf16Tol, "swiglu bf16 dup" + sz);
  }
}

TEST_P(ElementwiseConformance, ResidualInPlaceOrNotAndAxpy) {
  for (size_t n : kSizes) {
    const auto N = static_cast<int64_t>(n);
    std::vector<float> a = randn(n, n + 89), b = randn(n, n + 97);
    auto da = upload(a), db = upload(b);
    auto dout = alloc<float>(n);
    ASSERT_TRUE(ops().residual_forward(dout.ptr(), da.ptr(), db.ptr(), N).ok());
    std::vector<float> ref(n);
    ASSERT_TRUE(host().residual_forward(ref.data(), a.data(), b.data(), N).ok());
    expect_same_bits(download(dout), ref, "residual n " + std::to_string(n));
    ASSERT_TRUE(ops().residual_forward(da.ptr(), da.ptr(), db.ptr(), N).ok());  // out = a
    expect_same_bits(download(da), ref, "residual in place n " + std::to_string(n));

    ASSERT_TRUE(ops().axpy(db.ptr(), -0.7f, dout.ptr(), N).ok());
    ASSERT_TRUE(host().axpy(b.data(), -0.7f, ref.data(), N).ok());
    expect_close(download(db), b, kFp32Tol, "axpy n " + std::to_string(n));
  }
}

// QLoRA's 4-bit weights: every pointer of the view in device memory; the
// dequantized range (odd start, mid-block end) equals the host decoder bit
// for bit, plain and double-quantized.
TEST_P(ElementwiseConformance, Dequantize4bitEqualsTheHostDecoder) {
  for (bool double_quant : {false, true}) {
    const size_t n = 64 * 300 + 7;
    const std::vector<float> w = randn(n, 123);
    const Quant4Host q = quantize_4bit(w.data(), static_cast<int64_t>(n),
                                       {.type = Quant4Type::kNf4, .double_quant = double_quant});
    auto packed = upload(q.packed);
    const std::array<float, 16>& c4 = quant4_code(Quant4Type::kNf4);
    auto code = upload(std::vector<float>(c4.begin(), c4.end()));
    auto code8 = upload(std::vector<float>(dynamic8_code().begin(), dynamic8_code().end()));
    auto absmax = upload(double_quant ? std::vector<float>{0.0f} : q.absmax);
    auto absmax_q = upload(double_quant ? q.absmax_q : std::vector<uint8_t>{0});
    auto absmax2 = upload(double_quant ? q.absmax2 : std::vector<float>{0.0f});
    Quant4View v = q.view();
    v.packed = packed.ptr();
    v.code = code.ptr();
    if (double_quant) {
      v.absmax_q = absmax_q.ptr();
      v.absmax2 = absmax2.ptr();
      v.code8 = code8.ptr();
    } else {
      v.absmax = absmax.ptr();
    }
    const int64_t lo = 33, hi = static_cast<int64_t>(n) - 20;
    auto dout = alloc<float>(static_cast<size_t>(hi - lo));
    ASSERT_TRUE(ops().dequantize_4bit(v, lo, hi, dout.ptr()).ok());
    std::vector<float> ref(static_cast<size_t>(hi - lo));
    dequantize_4bit_reference(q.view(), lo, hi, ref.data());
    expect_same_bits(download(dout), ref, double_quant ? "double quant" : "nf4");
    EXPECT_FALSE(ops().dequantize_4bit(v, 0, static_cast<int64_t>(n) + 1, dout.ptr()).ok());
  }
}

ZT_INSTANTIATE_OPS_CONFORMANCE(ElementwiseConformance);

}  // namespace
}  // namespace zerotrain::device::testing
