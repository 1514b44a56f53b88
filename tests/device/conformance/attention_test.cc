// Attention Ops against the CPU oracle on every device: the att-keeping and
// lse-keeping fp32 pairs (T = 1..70, not multiples of a tile, and HD = 64 at
// T = 256; `first` null and packed documents), the backwards adding into a
// pre-filled dqkv, the bf16 forms with att and with lse (dqkv overwritten),
// KV-cached decode (pos > 0, several new tokens, GQA) and the
// InvalidArgument cases. Outputs start as NaN so an unwritten element fails;
// the lse backward runs twice for the same bits (no float atomics). Plus
// host checks of device/cuda/attention_math.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "device/conformance/ops_fixture.h"
#include "device/cuda/attention_math.h"

// A namespace of its own: the conformance tests may share one unity build.
namespace zerotrain::device::testing::attention_conformance {
namespace {

struct Shape {
  int64_t B, T, C, NH;
  std::string name() const {
    return "B" + std::to_string(B) + " T" + std::to_string(T) + " C" + std::to_string(C) + " NH" +
           std::to_string(NH);
  }
  size_t qkv() const { return static_cast<size_t>(B * T * 3 * C); }
  size_t out() const { return static_cast<size_t>(B * T * C); }
  size_t att() const { return static_cast<size_t>(B * NH * T * T); }
  size_t lse() const { return static_cast<size_t>(B * NH * T); }
};

// Each case runs one shape on the device under test and on the host.
class AttentionConformance : public OpsConformance {
 protected:
  void lse_case(const Shape& s, const std::vector<int32_t>* first, uint64_t seed);
  void bf16_case(const Shape& s, bool keep_att, uint64_t seed,
                 const std::vector<int32_t>* first = nullptr);
};

::testing::AssertionResult is_ok(const Status& s) {
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << s.to_string();
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// hs = 16 at lengths around the tiles (1, a few, 64 ± 1, 70), then HD = 64.
std::vector<Shape> shapes() {
  std::vector<Shape> s;
  for (int64_t T : {1, 5, 33, 63, 65, 70}) s.push_back({2, T, 64, 4});
  s.push_back({1, 256, 256, 4});
  return s;
}

// Packed documents: each row restarts at 0, 13 and 40 (the second row also
// at 5), so `first` is each query's last start at or before it.
std::vector<int32_t> packed_first(int64_t B, int64_t T) {
  std::vector<int32_t> first(static_cast<size_t>(B * T));
  for (int64_t b = 0; b < B; ++b) {
    int32_t start = 0;
    for (int64_t t = 0; t < T; ++t) {
      if (t == 13 || t == 40 || (b == 1 && t == 5)) start = static_cast<int32_t>(t);
      first[b * T + t] = start;
    }
  }
  return first;
}

TEST_P(AttentionConformance, KeepingAttMatchesHost) {
  uint64_t seed = 1;
  for (const Shape& s : shapes()) {
    SCOPED_TRACE(s.name());
    const auto qkv = randn(s.qkv(), ++seed);
    std::vector<float> out(s.out()), att(s.att());
    ASSERT_TRUE(
        is_ok(host().attention_forward(out.data(), att.data(), qkv.data(), s.B, s.T, s.C, s.NH)));
    auto dqkv_in = upload(qkv);
    auto dout = upload(std::vector<float>(s.out(), kNaN));
    auto datt = upload(std::vector<float>(s.att(), kNaN));
    ASSERT_TRUE(
        is_ok(ops().attention_forward(dout.ptr(), datt.ptr(), dqkv_in.ptr(), s.B, s.T, s.C, s.NH)));
    expect_close(download(dout), out, kFp32Tol, "attention_forward out " + s.name());
    expect_close(download(datt), att, kFp32Tol, "attention_forward att " + s.name());

    // The backward from the host's att, adding into random gradients.
    const auto dy = randn(s.out(), ++seed);
    const auto prior = randn(s.qkv(), ++seed);
    std::vector<float> grad = prior;
    ASSERT_TRUE(is_ok(host().attention_backward(grad.data(), dy.data(), qkv.data(), att.data(), s.B,
                                                s.T, s.C, s.NH)));
    auto ddy = upload(dy);
    auto dhatt = upload(att);
    auto dgrad = upload(prior);
    ASSERT_TRUE(is_ok(ops().attention_backward(dgrad.ptr(), ddy.ptr(), dqkv_in.ptr(), dhatt.ptr(),
                                               s.B, s.T, s.C, s.NH)));
    expect_close(download(dgrad), grad, kFp32Tol, "attention_backward dqkv " + s.name());
  }
}

// The lse pair for one shape, with `first` (host memory) or without; the
// backward twice, giving the same bits (no float atomics).
void AttentionConformance::lse_case(const Shape& s, const std::vector<int32_t>* first,
                                    uint64_t seed) {
  const std::string what = s.name() + (first ? " packed" : "");
  const auto qkv = randn(s.qkv(), seed);
  const int32_t* hfirst = first ? first->data() : nullptr;
  std::vector<float> out(s.out()), lse(s.lse());
  ASSERT_TRUE(is_ok(host().attention_forward_lse(out.data(), lse.data(), qkv.data(), s.B, s.T, s.C,
                                                 s.NH, hfirst)));
  auto dqkv_in = upload(qkv);
  DeviceArray<int32_t> dfirst;
  if (first) dfirst = upload(*first);
  auto dout = upload(std::vector<float>(s.out(), kNaN));
  auto dlse = upload(std::vector<float>(s.lse(), kNaN));
  ASSERT_TRUE(is_ok(ops().attention_forward_lse(dout.ptr(), dlse.ptr(), dqkv_in.ptr(), s.B, s.T,
                                                s.C, s.NH, dfirst.ptr())));
  expect_close(download(dout), out, kFp32Tol, "attention_forward_lse out " + what);
  expect_close(download(dlse), lse, kFp32Tol, "attention_forward_lse lse " + what);

  const auto dy = randn(s.out(), seed + 1);
  const auto prior = randn(s.qkv(), seed + 2);
  std::vector<float> grad = prior;
  ASSERT_TRUE(is_ok(host().attention_backward_lse(grad.data(), dy.data(), qkv.data(), lse.data(),
                                                  s.B, s.T, s.C, s.NH, hfirst)));
  auto ddy = upload(dy);
  auto dhlse = upload(lse);
  auto dgrad = upload(prior);
  ASSERT_TRUE(is_ok(ops().attention_backward_lse(dgrad.ptr(), ddy.ptr(), dqkv_in.ptr(), dhlse.ptr(),
                                                 s.B, s.T, s.C, s.NH, dfirst.ptr())));
  const auto got = download(dgrad);
  expect_close(got, grad, kFp32Tol, "attention_backward_lse dqkv " + what);
  auto dgrad2 = upload(prior);
  ASSERT_TRUE(is_ok(ops().attention_backward_lse(dgrad2.ptr(), ddy.ptr(), dqkv_in.ptr(),
                                                 dhlse.ptr(), s.B, s.T, s.C, s.NH, dfirst.ptr())));
  EXPECT_TRUE(same_bits(download(dgrad2), got)) << "attention_backward_lse twice " << what;
}

TEST_P(AttentionConformance, KeepingLseMatchesHost) {
  uint64_t seed = 100;
  for (const Shape& s : shapes()) {
    SCOPED_TRACE(s.name());
    lse_case(s, nullptr, seed += 3);
  }
}

TEST_P(AttentionConformance, KeepingLseWithPackedDocumentsMatchesHost) {
  uint64_t seed = 200;
  for (const Shape& s : {Shape{2, 41, 64, 4}, Shape{2, 70, 64, 4}, Shape{1, 256, 256, 4}}) {
    SCOPED_TRACE(s.name());
    const auto first = packed_first(s.B, s.T);
    lse_case(s, &first, seed += 3);
  }
}

// A sliding window of 24 (every query's first key moves with it), inside
// the packed documents: tiles before a block's windows are skipped.
TEST_P(AttentionConformance, KeepingLseWithSlidingWindowMatchesHost) {
  uint64_t seed = 300;
  for (const Shape& s : {Shape{2, 70, 64, 4}, Shape{1, 256, 256, 4}}) {
    SCOPED_TRACE(s.name());
    std::vector<int32_t> first = packed_first(s.B, s.T);
    for (int64_t i = 0; i < s.B * s.T; ++i)
      first[i] = std::max<int32_t>(first[i], static_cast<int32_t>(i % s.T) - 23);
    lse_case(s, &first, seed += 3);
  }
}

// The bf16 forms keeping att (keep_att) or lse.
void AttentionConformance::bf16_case(const Shape& s, bool keep_att, uint64_t seed,
                                     const std::vector<int32_t>* first) {
  const std::string what = s.name() + (keep_att ? " att" : " lse") + (first ? " first" : "");
  const int32_t* hfirst = first ? first->data() : nullptr;
  DeviceArray<int32_t> d_first;
  if (first) d_first = upload(*first);
  const auto qkv = to_bf16(randn(s.qkv(), seed));
  std::vector<BFloat16> out(s.out());
  std::vector<float> saved(keep_att ? s.att() : s.lse());
  float* hatt = keep_att ? saved.data() : nullptr;
  float* hlse = keep_att ? nullptr : saved.data();
  ASSERT_TRUE(is_ok(
      host().attention_forward_bf16(out.data(), hatt, hlse, qkv.data(), s.B, s.T, s.C, s.NH, hfirst)));
  auto dqkv_in = upload(qkv);
  auto dout = upload(to_bf16(std::vector<float>(s.out(), kNaN)));
  auto dsaved = upload(std::vector<float>(saved.size(), kNaN));
  ASSERT_TRUE(is_ok(ops().attention_forward_bf16(dout.ptr(), keep_att ? dsaved.ptr() : nullptr,
                                                 keep_att ? nullptr : dsaved.ptr(), dqkv_in.ptr(),
                                                 s.B, s.T, s.C, s.NH, d_first.ptr())));
  expect_close(download(dout), out, kBf16Tol, "attention_forward_bf16 out " + what);
  expect_close(download(dsaved), saved, kFp32Tol,
               std::string("attention_forward_bf16 ") + (keep_att ? "att " : "lse ") + what);

  // The backward from the host's att or lse; dqkv starts as NaN (overwritten).
  const auto dy = to_bf16(randn(s.out(), seed + 1));
  std::vector<BFloat16> grad(s.qkv());
  ASSERT_TRUE(is_ok(host().attention_backward_bf16(grad.data(), dy.data(), qkv.data(), hatt, hlse,
                                                   s.B, s.T, s.C, s.NH, hfirst)));
  auto ddy = upload(dy);
  auto dhsaved = upload(saved);
  auto dgrad = upload(to_bf16(std::vector<float>(s.qkv(), kNaN)));
  ASSERT_TRUE(is_ok(ops().attention_backward_bf16(
      dgrad.ptr(), ddy.ptr(), dqkv_in.ptr(), keep_att ? dhsaved.ptr() : nullptr,
      keep_att ? nullptr : dhsaved.ptr(), s.B, s.T, s.C, s.NH, d_first.ptr())));
  expect_close(download(dgrad), grad, kBf16Tol, "attention_backward_bf16 dqkv " + what);
}

TEST_P(AttentionConformance, Bf16KeepingAttMatchesHost) {
  uint64_t seed = 300;
  for (const Shape& s : shapes()) {
    SCOPED_TRACE(s.name());
    bf16_case(s, /*keep_att=*/true, seed += 2);
  }
}

TEST_P(AttentionConformance, Bf16KeepingLseMatchesHost) {
  uint64_t seed = 400;
  for (const Shape& s : shapes()) {
    SCOPED_TRACE(s.name());
    bf16_case(s, /*keep_att=*/false, seed += 2);
  }
}

// Packed documents and a sliding window of 24 (the lse form skips the
// keys before a row block's earliest first key).
TEST_P(AttentionConformance, Bf16WithPackedDocumentsAndSlidingWindowMatchesHost) {
  uint64_t seed = 500;
  for (const Shape& s : {Shape{2, 70, 64, 4}, Shape{1, 256, 256, 4}}) {
    SCOPED_TRACE(s.name());
    std::vector<int32_t> first = packed_first(s.B, s.T);
    bf16_case(s, /*keep_att=*/false, seed += 2, &first);
    for (int64_t i = 0; i < s.B * s.T; ++i)
      first[i] = std::max<int32_t>(first[i], static_cast<int32_t>(i % s.T) - 23);
    bf16_case(s, /*keep_att=*/false, seed += 2, &first);
    bf16_case(s, /*keep_att=*/true, seed += 2, &first);
  }
}

struct DecodeShape {
  int64_t B, n, pos, Tmax, NH, NKV, HD, window = 0;
  int32_t pad0 = 0;  // row 0's first key (a left-padded prompt); the other rows' is 0
  std::string name() const {
    return "B" + std::to_string(B) + " n" + std::to_string(n) + " pos" + std::to_string(pos) +
           " NH" + std::to_string(NH) + " NKV" + std::to_string(NKV) + " HD" + std::to_string(HD) +
           " window" + std::to_string(window) + " pad0 " + std::to_string(pad0);
  }
};

TEST_P(AttentionConformance, DecodeMatchesHost) {
  uint64_t seed = 500;
  const DecodeShape cases[] = {
      {2, 1, 0, 16, 4, 4, 16},         // the first token
      {2, 1, 11, 16, 4, 4, 16},        // one token after a prompt
      {2, 3, 5, 16, 4, 2, 16},         // several new tokens, GQA (2 heads a group)
      {2, 4, 9, 16, 4, 1, 40},         // multi-query (one kv head), HD not a power of 2
      {1, 2, 100, 130, 4, 2, 64},      // a long cache
      {2, 3, 100, 130, 4, 2, 64, 16},  // a sliding window, new tokens at its edge
      {1, 1, 3, 16, 4, 4, 16, 8},      // a window longer than the cache so far
      {2, 6, 0, 16, 4, 2, 16, 0, 3},   // a left-padded prompt: row 0's first 3 are pads
      {2, 1, 9, 16, 4, 2, 16, 4, 3},   // after it, with a window
  };
  for (const DecodeShape& s : cases) {
    SCOPED_TRACE(s.name());
    const int64_t C = s.NH * s.HD;
    const auto qkv = randn(static_cast<size_t>(s.B * s.n * 3 * C), ++seed);
    const size_t cache = static_cast<size_t>(s.B * s.NKV * s.Tmax * s.HD);
    std::vector<float> k = randn(cache, ++seed), v = randn(cache, ++seed);
    auto dqkv = upload(qkv);
    auto dk = upload(k);
    auto dv = upload(v);
    auto dout = upload(std::vector<float>(static_cast<size_t>(s.B * s.n * C), kNaN));
    std::vector<float> out(static_cast<size_t>(s.B * s.n * C));
    std::vector<int32_t> row_first(static_cast<size_t>(s.B), 0);
    row_first[0] = s.pad0;
    auto drow_first = upload(row_first);
    ASSERT_TRUE(
        is_ok(host().attention_decode(out.data(), qkv.data(), k.data(), v.data(), s.B, s.n, s.pos,
                                      s.Tmax, s.NH, s.NKV, s.HD, s.window, row_first.data())));
    ASSERT_TRUE(
        is_ok(ops().attention_decode(dout.ptr(), dqkv.ptr(), dk.ptr(), dv.ptr(), s.B, s.n, s.pos,
                                     s.Tmax, s.NH, s.NKV, s.HD, s.window, drow_first.ptr())));
    expect_close(download(dout), out, kFp32Tol, "attention_decode out " + s.name());
    // The caches are copies: equal bits.
    EXPECT_EQ(download(dk), k) << "k_cache " << s.name();
    EXPECT_EQ(download(dv), v) << "v_cache " << s.name();
  }
}

// A reference for the bf16 decode, in double: q·k over the widened values,
// softmax, each probability rounded to bf16 (autocast's att·v operand),
// Σ p·v, then out rounded to bf16. The caches must already hold the new
// keys and values.
std::vector<BFloat16> reference_decode_bf16(const DecodeShape& s, const std::vector<float>& qkv,
                                            const std::vector<float>& k,
                                            const std::vector<float>& v, bool round_p) {
  const int64_t C = s.NH * s.HD, group = s.NH / s.NKV;
  std::vector<float> out(static_cast<size_t>(s.B * s.n * C), 0.0f);
  for (int64_t b = 0; b < s.B; ++b) {
    for (int64_t h = 0; h < s.NH; ++h) {
      for (int64_t i = 0; i < s.n; ++i) {
        const int64_t last = s.pos + i, g = h / group;
        int64_t lo = b == 0 ? s.pad0 : 0;
        if (s.window > 0) lo = std::max(lo, last - s.window + 1);
        if (lo > last) continue;
        const float* q = qkv.data() + (b * s.n + i) * 3 * C + h * s.HD;
        const float* kh = k.data() + (b * s.NKV + g) * s.Tmax * s.HD;
        const float* vh = v.data() + (b * s.NKV + g) * s.Tmax * s.HD;
        std::vector<double> w;
        double max = -INFINITY, sum = 0;
        for (int64_t t = lo; t <= last; ++t) {
          double dot = 0;
          for (int64_t d = 0; d < s.HD; ++d) dot += double{q[d]} * kh[t * s.HD + d];
          w.push_back(dot / std::sqrt(static_cast<double>(s.HD)));
          max = std::max(max, w.back());
        }
        for (double& x : w) sum += (x = std::exp(x - max));
        for (int64_t d = 0; d < s.HD; ++d) {
          double y = 0;
          for (int64_t t = lo; t <= last; ++t) {
            const auto p = static_cast<float>(w[static_cast<size_t>(t - lo)] / sum);
            y += double{round_p ? to_float(to_bfloat16(p)) : p} * vh[t * s.HD + d];
          }
          out[static_cast<size_t>((b * s.n + i) * C + h * s.HD + d)] = static_cast<float>(y);
        }
      }
    }
  }
  return to_bf16(out);
}

// The bf16 form (bf16 weights and KV cache in generation) against the
// double reference: within a few output roundings of it (the host's fp32
// sums can round an output the other way), where leaving the
// probabilities unrounded is well outside; on the device under test within
// bf16 tolerance of the host (CUDA sums in another order). The caches hold
// the new keys' and values' bits.
TEST_P(AttentionConformance, DecodeBf16RoundsAsAutocast) {
  uint64_t seed = 900;
  const DecodeShape cases[] = {
      {2, 1, 11, 16, 4, 4, 16},        // one token after a prompt
      {2, 3, 5, 16, 4, 2, 16},         // several new tokens, GQA
      {2, 4, 9, 16, 4, 1, 40},         // multi-query, HD not a power of 2
      {2, 3, 100, 130, 4, 2, 64, 16},  // a sliding window
      {2, 6, 0, 16, 4, 2, 16, 0, 3},   // a left-padded prompt
  };
  for (const DecodeShape& s : cases) {
    SCOPED_TRACE(s.name());
    const int64_t C = s.NH * s.HD;
    const size_t cache = static_cast<size_t>(s.B * s.NKV * s.Tmax * s.HD);
    const auto qkv16 = to_bf16(randn(static_cast<size_t>(s.B * s.n * 3 * C), ++seed));
    const auto k16 = to_bf16(randn(cache, ++seed)), v16 = to_bf16(randn(cache, ++seed));
    std::vector<int32_t> row_first(static_cast<size_t>(s.B), 0);
    row_first[0] = s.pad0;
    std::vector<BFloat16> out(static_cast<size_t>(s.B * s.n * C)), hk = k16, hv = v16;
    ASSERT_TRUE(is_ok(host().attention_decode_bf16(out.data(), qkv16.data(), hk.data(), hv.data(),
                                                   s.B, s.n, s.pos, s.Tmax, s.NH, s.NKV, s.HD,
                                                   s.window, row_first.data())));
    // The caches: the old bits, and the new keys' and values' (a group's first head).
    auto want_k = k16, want_v = v16;
    for (int64_t b = 0; b < s.B; ++b)
      for (int64_t i = 0; i < s.n; ++i)
        for (int64_t g = 0; g < s.NKV; ++g)
          for (int64_t d = 0; d < s.HD; ++d) {
            const int64_t row = (b * s.n + i) * 3 * C + g * (s.NH / s.NKV) * s.HD + d;
            const auto at = static_cast<size_t>(((b * s.NKV + g) * s.Tmax + s.pos + i) * s.HD + d);
            want_k[at] = qkv16[static_cast<size_t>(row + C)];
            want_v[at] = qkv16[static_cast<size_t>(row + 2 * C)];
          }
    EXPECT_TRUE(hk == want_k && hv == want_v) << "host bf16 caches";
    const auto qkv = to_f32(qkv16), k = to_f32(want_k), v = to_f32(want_v);
    const auto rel = [](const std::vector<BFloat16>& a, const std::vector<BFloat16>& b) {
      double num = 0, den = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        num += std::pow(double{to_float(a[i])} - to_float(b[i]), 2);
        den += std::pow(double{to_float(b[i])}, 2);
      }
      return std::sqrt(num / den);
    };
    const double err = rel(out, reference_decode_bf16(s, qkv, k, v, true));
    const double unrounded = rel(out, reference_decode_bf16(s, qkv, k, v, false));
    std::cout << "[decode bf16 " << s.name() << "] relative L2 to the reference " << err
              << ", to unrounded probabilities " << unrounded << "\n";
    EXPECT_LE(err, 3e-4);
    EXPECT_GT(unrounded, std::max(3 * err, 1e-3)) << "the reference's rounding is not tested";
    // The device under test.
    auto dqkv = upload(qkv16);
    auto dk = upload(k16);
    auto dv = upload(v16);
    auto dout = upload(to_bf16(std::vector<float>(out.size(), kNaN)));
    auto drow_first = upload(row_first);
    ASSERT_TRUE(is_ok(ops().attention_decode_bf16(dout.ptr(), dqkv.ptr(), dk.ptr(), dv.ptr(), s.B,
                                                  s.n, s.pos, s.Tmax, s.NH, s.NKV, s.HD, s.window,
                                                  drow_first.ptr())));
    expect_close(download(dout), out, kBf16Tol, "attention_decode_bf16 out " + s.name());
    EXPECT_TRUE(download(dk) == want_k) << "k_cache " << s.name();
    EXPECT_TRUE(download(dv) == want_v) << "v_cache " << s.name();
  }
}

TEST_P(AttentionConformance, BadArgumentsAreInvalidArgument) {
  auto buf = upload(std::vector<float>(4096, 0.0f));
  auto buf16 = upload(std::vector<BFloat16>(4096));
  float* p = buf.ptr();
  BFloat16* p16 = buf16.ptr();
  auto expect_invalid = [](const Status& s, const char* what) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << what << ": " << s.to_string();
  };
  // Decode: past the cache, a negative position, no new token, NKV not dividing NH.
  expect_invalid(ops().attention_decode(p, p, p, p, 1, 2, 15, 16, 4, 2, 8, 0, nullptr),
                 "decode pos+n > Tmax");
  expect_invalid(ops().attention_decode(p, p, p, p, 1, 1, -1, 16, 4, 2, 8, 0, nullptr),
                 "decode pos < 0");
  expect_invalid(ops().attention_decode(p, p, p, p, 1, 0, 0, 16, 4, 2, 8, 0, nullptr),
                 "decode n = 0");
  expect_invalid(ops().attention_decode(p, p, p, p, 1, 1, 0, 16, 4, 3, 8, 0, nullptr),
                 "decode NKV = 3");
  expect_invalid(ops().attention_decode(p, p, p, p, 1, 1, 0, 16, 4, 0, 8, 0, nullptr),
                 "decode NKV = 0");
  expect_invalid(ops().attention_decode(p, p, p, p, 1, 1, 0, 16, 4, 2, 8, -1, nullptr),
                 "decode window < 0");
  expect_invalid(ops().attention_decode_bf16(p16, p16, p16, p16, 1, 2, 15, 16, 4, 2, 8, 0, nullptr),
                 "decode_bf16 pos+n > Tmax");
  expect_invalid(ops().attention_decode_bf16(p16, p16, p16, p16, 1, 1, 0, 16, 4, 3, 8, 0, nullptr),
                 "decode_bf16 NKV = 3");
  // C not a multiple of NH.
  expect_invalid(ops().attention_forward(p, p, p, 1, 4, 10, 3), "forward C % NH");
  expect_invalid(ops().attention_backward(p, p, p, p, 1, 4, 10, 3), "backward C % NH");
  expect_invalid(ops().attention_forward_lse(p, p, p, 1, 4, 10, 3), "forward_lse C % NH");
  expect_invalid(ops().attention_backward_lse(p, p, p, p, 1, 4, 10, 3), "backward_lse C % NH");
  // bf16: exactly one of att and lse.
  expect_invalid(ops().attention_forward_bf16(p16, nullptr, nullptr, p16, 1, 4, 8, 2),
                 "forward_bf16 neither");
  expect_invalid(ops().attention_forward_bf16(p16, p, p, p16, 1, 4, 8, 2), "forward_bf16 both");
  expect_invalid(ops().attention_backward_bf16(p16, p16, p16, nullptr, nullptr, 1, 4, 8, 2),
                 "backward_bf16 neither");
  expect_invalid(ops().attention_backward_bf16(p16, p16, p16, p, p, 1, 4, 8, 2),
                 "backward_bf16 both");
}

ZT_INSTANTIATE_OPS_CONFORMANCE(AttentionConformance);

// device/cuda/attention_math.h on the host: the mask, the tile skip, the
// online softmax's rescale (an online pass over chunks gives the lse of
// one pass) and the head-size buckets.
TEST(AttentionMath, MaskOnlineSoftmaxAndBuckets) {
  using namespace zerotrain::device::cuda;
  EXPECT_TRUE(attends(5, 5, 0));
  EXPECT_TRUE(attends(5, 3, 3));
  EXPECT_FALSE(attends(5, 6, 0));
  EXPECT_FALSE(attends(5, 2, 3));
  EXPECT_FALSE(attends_any(5, 3, 0, 3));
  EXPECT_TRUE(attends_any(5, 3, 0, 4));
  EXPECT_FALSE(attends_any(5, 0, 6, 10));
  EXPECT_TRUE(attends_any(70, 40, 64, 96));
  EXPECT_FALSE(attends_any(50, 45, 0, 32));
  EXPECT_EQ(softmax_rescale(-INFINITY, -INFINITY), 0.0f);
  EXPECT_EQ(softmax_rescale(-INFINITY, 2.0f), 0.0f);
  EXPECT_EQ(softmax_rescale(1.5f, 1.5f), 1.0f);
  EXPECT_EQ(softmax_rescale(0.0f, 1.0f), std::exp(-1.0f));

  const auto s = randn(77, 9, 3.0f);
  float m = -INFINITY, l = 0.0f;
  for (size_t c0 = 0; c0 < s.size(); c0 += 16) {
    float mt = -INFINITY;
    for (size_t j = c0; j < std::min(s.size(), c0 + 16); ++j) mt = std::max(mt, s[j]);
    const float m_new = std::max(m, mt);
    float sum = 0.0f;
    for (size_t j = c0; j < std::min(s.size(), c0 + 16); ++j) sum += std::exp(s[j] - m_new);
    l = l * softmax_rescale(m, m_new) + sum;
    m = m_new;
  }
  double max = -INFINITY, sum = 0;
  for (float x : s) max = std::max<double>(max, x);
  for (float x : s) sum += std::exp(x - max);
  EXPECT_NEAR(softmax_lse(m, l), max + std::log(sum), 1e-5);
  EXPECT_EQ(softmax_grad(0.5f, 3.0f, 1.0f), 1.0f);

  EXPECT_EQ(attention_head_bucket(1), 32);
  EXPECT_EQ(attention_head_bucket(32), 32);
  EXPECT_EQ(attention_head_bucket(33), 64);
  EXPECT_EQ(attention_head_bucket(64), 64);
  EXPECT_EQ(attention_head_bucket(80), 128);
  EXPECT_EQ(attention_head_bucket(256), 256);
  EXPECT_EQ(attention_head_bucket(257), 0);
  EXPECT_EQ(attention_head_bucket(0), 0);
}

}  // namespace
}  // namespace zerotrain::device::testing::attention_conformance
