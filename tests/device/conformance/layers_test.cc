// Conformance of the layer ops (encoder, LayerNorm, RMSNorm, RoPE packing,
// fused cross-entropy) on every built device against the host CPU ops:
// small GPT-2/Llama shapes and bigger ones that cross the CUDA kernels'
// block and tile edges, with and without positions (packed documents),
// ignored targets, padded vocab columns, dlogits written over the logits,
// backwards that ADD (gradients pre-filled with random values) or
// overwrite (outputs poisoned first), the bad-token and bad-target errors
// (code and the same message as the CPU's), and two runs giving the same
// bits. Plus host checks of device/cuda/layer_math.h, the cross-entropy's
// per-element math, against the CPU's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "device/conformance/ops_fixture.h"
#include "device/cpu/kernels/vec_math.h"
#include "device/cuda/layer_math.h"

namespace zerotrain::device::testing {
namespace {

struct EncoderShape {
  int64_t B, T, C, V;
  bool wpe, positions;
};
struct RopeShape {
  int64_t B, T, NH, NKV, HD;
  bool positions;
};
struct CeShape {
  int64_t B, T, V, Vp;
};

// Each case runs one shape on the device under test and on the host.
class LayersConformance : public OpsConformance {
 protected:
  void encoder_case(const EncoderShape& s);
  void layernorm_case(int64_t B, int64_t T, int64_t C);
  void rmsnorm_case(int64_t rows, int64_t C);
  void rope_case(const RopeShape& s);
  void crossentropy_case(const CeShape& s);
};

::testing::AssertionResult is_ok(const Status& s) {
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << s.to_string();
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<int32_t> random_ids(size_t n, int32_t hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, hi - 1);
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = d(rng);
  return v;
}

// Packed documents: row b restarts its positions at t = 3 + b (and 0).
std::vector<int32_t> packed_positions(int64_t B, int64_t T) {
  std::vector<int32_t> p(B * T);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t start = std::min<int64_t>(T, 3 + b);
    for (int64_t t = 0; t < T; ++t) p[b * T + t] = static_cast<int32_t>(t < start ? t : t - start);
  }
  return p;
}

// ---- encoder ----

void LayersConformance::encoder_case(const EncoderShape& s) {
  const std::string what = "encoder B=" + std::to_string(s.B) + " T=" + std::to_string(s.T) +
                           (s.wpe ? " wpe" : "") + (s.positions ? " positions" : "");
  const int64_t BT = s.B * s.T, maxT = s.T + 5;
  // A small id range makes tokens repeat, so the backward's scatter sums.
  const auto tokens = random_ids(BT, static_cast<int32_t>(std::min<int64_t>(s.V, 11)), 3);
  const auto pos = packed_positions(s.B, s.T);
  const int32_t* hp = s.positions ? pos.data() : nullptr;
  const auto wte = randn(s.V * s.C, 1), wpe = randn(maxT * s.C, 2), dout = randn(BT * s.C, 4);
  const auto dwte0 = randn(s.V * s.C, 5), dwpe0 = randn(maxT * s.C, 6);

  auto d_tokens = upload(tokens), d_pos = upload(pos);
  const int32_t* dp = s.positions ? d_pos.ptr() : nullptr;
  auto d_wte = upload(wte), d_wpe = upload(wpe), d_dout = upload(dout);
  auto d_out = upload(randn(BT * s.C, 7));
  std::vector<float> out(BT * s.C);
  ASSERT_TRUE(is_ok(ops().encoder_forward(d_out.ptr(), d_tokens.ptr(), d_wte.ptr(),
                                          s.wpe ? d_wpe.ptr() : nullptr, s.B, s.T, s.C, s.V, dp)));
  ASSERT_TRUE(is_ok(host().encoder_forward(out.data(), tokens.data(), wte.data(),
                                           s.wpe ? wpe.data() : nullptr, s.B, s.T, s.C, s.V, hp)));
  expect_close(download(d_out), out, kFp32Tol, what + " out");

  auto dwte = dwte0, dwpe = dwpe0;
  ASSERT_TRUE(is_ok(host().encoder_backward(dwte.data(), s.wpe ? dwpe.data() : nullptr, dout.data(),
                                            tokens.data(), s.B, s.T, s.C, hp)));
  std::vector<float> first_dwte;
  for (int run = 0; run < 2; ++run) {
    auto d_dwte = upload(dwte0), d_dwpe = upload(dwpe0);
    ASSERT_TRUE(is_ok(ops().encoder_backward(d_dwte.ptr(), s.wpe ? d_dwpe.ptr() : nullptr,
                                             d_dout.ptr(), d_tokens.ptr(), s.B, s.T, s.C, dp)));
    const auto got = download(d_dwte);
    expect_close(got, dwte, kFp32Tol, what + " dwte");
    expect_close(download(d_dwpe), s.wpe ? dwpe : dwpe0, kFp32Tol, what + " dwpe");
    if (run == 0) {
      first_dwte = got;
    } else {
      EXPECT_TRUE(same_bits(got, first_dwte)) << what << ": dwte differs between runs";
    }
  }
}

TEST_P(LayersConformance, EncoderMatchesHost) {
  for (bool wpe : {true, false}) {
    for (bool positions : {false, true}) {
      encoder_case({2, 7, 48, 50, wpe, positions});
      encoder_case({4, 96, 300, 1000, wpe, positions});
    }
  }
}

TEST_P(LayersConformance, EncoderRejectsTokenOutsideVocab) {
  const int64_t B = 2, T = 7, C = 48, V = 50;
  const auto wte = randn(V * C, 1), wpe = randn(T * C, 2);
  auto d_wte = upload(wte), d_wpe = upload(wpe);
  auto d_out = alloc<float>(B * T * C);
  std::vector<float> out(B * T * C);
  for (int32_t bad : {static_cast<int32_t>(V), -3}) {
    auto tokens = random_ids(B * T, V, 1);
    tokens[1 * T + 3] = bad;
    tokens[1 * T + 5] = static_cast<int32_t>(V + 7);  // a later one is not the one named
    auto d_tokens = upload(tokens);
    const Status s =
        ops().encoder_forward(d_out.ptr(), d_tokens.ptr(), d_wte.ptr(), d_wpe.ptr(), B, T, C, V);
    const Status h =
        host().encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C, V);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    EXPECT_NE(s.message().find("b=1"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("t=3"), std::string::npos) << s.message();
    EXPECT_EQ(s.message(), h.message());
  }
  // The device stays usable after the error.
  auto d_tokens = upload(random_ids(B * T, V, 2));
  EXPECT_TRUE(is_ok(
      ops().encoder_forward(d_out.ptr(), d_tokens.ptr(), d_wte.ptr(), d_wpe.ptr(), B, T, C, V)));
}

// ---- LayerNorm and RMSNorm ----

void LayersConformance::layernorm_case(int64_t B, int64_t T, int64_t C) {
  const std::string what = "layernorm " + std::to_string(B * T) + "x" + std::to_string(C);
  const int64_t N = B * T * C;
  auto inp = randn(N, 1, 2.0f);
  for (int64_t i = 0; i < N; i += C) inp[i] += 30.0f;  // an offset mean
  const auto w = randn(C, 2), b = randn(C, 3), dout = randn(N, 4);
  auto d_inp = upload(inp), d_w = upload(w), d_b = upload(b), d_dout = upload(dout);

  std::vector<float> out(N), mean(B * T), rstd(B * T);
  std::vector<BFloat16> out16(N);
  ASSERT_TRUE(is_ok(host().layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(),
                                             w.data(), b.data(), B, T, C)));
  ASSERT_TRUE(is_ok(host().layernorm_forward_bf16(out16.data(), nullptr, nullptr, inp.data(),
                                                  w.data(), b.data(), B, T, C)));
  for (bool stats : {true, false}) {
    auto d_out = upload(randn(N, 5)), d_mean = alloc<float>(B * T), d_rstd = alloc<float>(B * T);
    auto d_out16 = upload(to_bf16(randn(N, 6)));
    float* m = stats ? d_mean.ptr() : nullptr;
    float* r = stats ? d_rstd.ptr() : nullptr;
    ASSERT_TRUE(is_ok(
        ops().layernorm_forward(d_out.ptr(), m, r, d_inp.ptr(), d_w.ptr(), d_b.ptr(), B, T, C)));
    expect_close(download(d_out), out, kFp32Tol, what + " out");
    if (stats) {
      expect_close(download(d_mean), mean, kFp32Tol, what + " mean");
      expect_close(download(d_rstd), rstd, kFp32Tol, what + " rstd");
    }
    ASSERT_TRUE(is_ok(ops().layernorm_forward_bf16(d_out16.ptr(), m, r, d_inp.ptr(), d_w.ptr(),
                                                   d_b.ptr(), B, T, C)));
    expect_close(download(d_out16), out16, kBf16Tol, what + " bf16 out");
    if (stats) expect_close(download(d_rstd), rstd, kFp32Tol, what + " bf16 rstd");
  }

  const auto dinp0 = randn(N, 7), dw0 = randn(C, 8), db0 = randn(C, 9);
  auto dinp = dinp0, dw = dw0, db = db0;
  ASSERT_TRUE(
      is_ok(host().layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(),
                                      w.data(), mean.data(), rstd.data(), B, T, C)));
  auto d_mean = upload(mean), d_rstd = upload(rstd);
  std::vector<float> first;
  for (int run = 0; run < 2; ++run) {
    auto d_dinp = upload(dinp0), d_dw = upload(dw0), d_db = upload(db0);
    ASSERT_TRUE(is_ok(ops().layernorm_backward(d_dinp.ptr(), d_dw.ptr(), d_db.ptr(), d_dout.ptr(),
                                               d_inp.ptr(), d_w.ptr(), d_mean.ptr(), d_rstd.ptr(),
                                               B, T, C)));
    expect_close(download(d_dinp), dinp, kFp32Tol, what + " dinp");
    const auto got_dw = download(d_dw);
    expect_close(got_dw, dw, kFp32Tol, what + " dweight");
    expect_close(download(d_db), db, kFp32Tol, what + " dbias");
    if (run == 0) {
      first = got_dw;
    } else {
      EXPECT_TRUE(same_bits(got_dw, first)) << what << ": dweight differs between runs";
    }
  }
}

TEST_P(LayersConformance, LayerNormMatchesHost) {
  layernorm_case(2, 7, 48);
  layernorm_case(2, 32, 800);   // channels beyond one block of threads
  layernorm_case(9, 1000, 80);  // many row ranges, the last one partial
}

void LayersConformance::rmsnorm_case(int64_t rows, int64_t C) {
  const std::string what = "rmsnorm " + std::to_string(rows) + "x" + std::to_string(C);
  const int64_t N = rows * C;
  const float eps = 1e-6f;
  const auto inp = randn(N, 1, 3.0f), w = randn(C, 2), dout = randn(N, 3);
  auto d_inp = upload(inp), d_w = upload(w), d_dout = upload(dout);
  std::vector<float> out(N), rstd(rows);
  ASSERT_TRUE(
      is_ok(host().rmsnorm_forward(out.data(), rstd.data(), inp.data(), w.data(), rows, C, eps)));
  for (bool stats : {true, false}) {
    auto d_out = upload(randn(N, 4)), d_rstd = alloc<float>(rows);
    ASSERT_TRUE(is_ok(ops().rmsnorm_forward(d_out.ptr(), stats ? d_rstd.ptr() : nullptr,
                                            d_inp.ptr(), d_w.ptr(), rows, C, eps)));
    expect_close(download(d_out), out, kFp32Tol, what + " out");
    if (stats) expect_close(download(d_rstd), rstd, kFp32Tol, what + " rstd");
  }
  {  // the bf16 Llama path's form: out in bf16
    std::vector<BFloat16> out16(N);
    ASSERT_TRUE(is_ok(host().rmsnorm_forward_bf16(out16.data(), nullptr, inp.data(), w.data(), rows,
                                                  C, eps)));
    auto d_out16 = alloc<BFloat16>(N);
    auto d_rstd = alloc<float>(rows);
    ASSERT_TRUE(is_ok(ops().rmsnorm_forward_bf16(d_out16.ptr(), d_rstd.ptr(), d_inp.ptr(),
                                                 d_w.ptr(), rows, C, eps)));
    expect_close(download(d_out16), out16, kBf16Tol, what + " bf16 out");
    expect_close(download(d_rstd), rstd, kFp32Tol, what + " bf16 rstd");
  }
  const auto dinp0 = randn(N, 5), dw0 = randn(C, 6);
  auto dinp = dinp0, dw = dw0;
  ASSERT_TRUE(is_ok(host().rmsnorm_backward(dinp.data(), dw.data(), dout.data(), inp.data(),
                                            w.data(), rstd.data(), rows, C)));
  auto d_rstd = upload(rstd);
  std::vector<float> first;
  for (int run = 0; run < 2; ++run) {
    auto d_dinp = upload(dinp0), d_dw = upload(dw0);
    ASSERT_TRUE(is_ok(ops().rmsnorm_backward(d_dinp.ptr(), d_dw.ptr(), d_dout.ptr(), d_inp.ptr(),
                                             d_w.ptr(), d_rstd.ptr(), rows, C)));
    expect_close(download(d_dinp), dinp, kFp32Tol, what + " dinp");
    const auto got_dw = download(d_dw);
    expect_close(got_dw, dw, kFp32Tol, what + " dweight");
    if (run == 0) {
      first = got_dw;
    } else {
      EXPECT_TRUE(same_bits(got_dw, first)) << what << ": dweight differs between runs";
    }
  }
}

TEST_P(LayersConformance, RmsNormMatchesHost) {
  rmsnorm_case(14, 48);
  rmsnorm_case(64, 800);
  rmsnorm_case(9000, 80);
}

// ---- RoPE + grouped-query packing ----

void LayersConformance::rope_case(const RopeShape& s) {
  const std::string what = "rope NH=" + std::to_string(s.NH) + " NKV=" + std::to_string(s.NKV) +
                           " HD=" + std::to_string(s.HD) + (s.positions ? " positions" : "");
  const int64_t BT = s.B * s.T, C = s.NH * s.HD, KC = s.NKV * s.HD, half = s.HD / 2;
  std::vector<float> cos(s.T * half), sin(s.T * half);
  for (int64_t t = 0; t < s.T; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = t * std::pow(10000.0, -2.0 * i / s.HD);
      cos[t * half + i] = static_cast<float>(std::cos(angle));
      sin[t * half + i] = static_cast<float>(std::sin(angle));
    }
  }
  const auto q = randn(BT * C, 1), k = randn(BT * KC, 2), v = randn(BT * KC, 3);
  const auto dqkv = randn(BT * 3 * C, 4);
  const auto pos = packed_positions(s.B, s.T);
  auto d_pos = upload(pos);
  const int32_t* hp = s.positions ? pos.data() : nullptr;
  const int32_t* dp = s.positions ? d_pos.ptr() : nullptr;
  auto d_q = upload(q), d_k = upload(k), d_v = upload(v), d_dqkv = upload(dqkv);
  auto d_cos = upload(cos), d_sin = upload(sin);

  std::vector<float> qkv(BT * 3 * C);
  ASSERT_TRUE(is_ok(host().rope_pack_qkv(qkv.data(), q.data(), k.data(), v.data(), cos.data(),
                                         sin.data(), s.B, s.T, s.NH, s.NKV, s.HD, hp)));
  auto d_qkv = upload(randn(BT * 3 * C, 5));
  ASSERT_TRUE(is_ok(ops().rope_pack_qkv(d_qkv.ptr(), d_q.ptr(), d_k.ptr(), d_v.ptr(), d_cos.ptr(),
                                        d_sin.ptr(), s.B, s.T, s.NH, s.NKV, s.HD, dp)));
  expect_close(download(d_qkv), qkv, kFp32Tol, what + " qkv");

  std::vector<float> dq(BT * C), dk(BT * KC), dv(BT * KC);
  ASSERT_TRUE(is_ok(host().rope_unpack_qkv_backward(dq.data(), dk.data(), dv.data(), dqkv.data(),
                                                    cos.data(), sin.data(), s.B, s.T, s.NH, s.NKV,
                                                    s.HD, hp)));
  // Poisoned: the backward overwrites them.
  auto d_dq = upload(randn(BT * C, 6)), d_dk = upload(randn(BT * KC, 7));
  auto d_dv = upload(randn(BT * KC, 8));
  ASSERT_TRUE(is_ok(ops().rope_unpack_qkv_backward(d_dq.ptr(), d_dk.ptr(), d_dv.ptr(), d_dqkv.ptr(),
                                                   d_cos.ptr(), d_sin.ptr(), s.B, s.T, s.NH, s.NKV,
                                                   s.HD, dp)));
  expect_close(download(d_dq), dq, kFp32Tol, what + " dq");
  expect_close(download(d_dk), dk, kFp32Tol, what + " dk");
  expect_close(download(d_dv), dv, kFp32Tol, what + " dv");

  // The bf16 Llama path's forms (bf16 in, bf16 out).
  const auto q16 = to_bf16(q), k16 = to_bf16(k), v16 = to_bf16(v), dqkv16 = to_bf16(dqkv);
  std::vector<BFloat16> qkv16(BT * 3 * C), dq16(BT * C), dk16(BT * KC), dv16(BT * KC);
  ASSERT_TRUE(is_ok(host().rope_pack_qkv_bf16(qkv16.data(), q16.data(), k16.data(), v16.data(),
                                              cos.data(), sin.data(), s.B, s.T, s.NH, s.NKV, s.HD,
                                              hp)));
  ASSERT_TRUE(is_ok(host().rope_unpack_qkv_backward_bf16(dq16.data(), dk16.data(), dv16.data(),
                                                         dqkv16.data(), cos.data(), sin.data(), s.B,
                                                         s.T, s.NH, s.NKV, s.HD, hp)));
  auto d_q16 = upload(q16), d_k16 = upload(k16), d_v16 = upload(v16), d_dqkv16 = upload(dqkv16);
  auto d_qkv16 = alloc<BFloat16>(BT * 3 * C), d_dq16 = alloc<BFloat16>(BT * C);
  auto d_dk16 = alloc<BFloat16>(BT * KC), d_dv16 = alloc<BFloat16>(BT * KC);
  ASSERT_TRUE(is_ok(ops().rope_pack_qkv_bf16(d_qkv16.ptr(), d_q16.ptr(), d_k16.ptr(), d_v16.ptr(),
                                             d_cos.ptr(), d_sin.ptr(), s.B, s.T, s.NH, s.NKV, s.HD,
                                             dp)));
  ASSERT_TRUE(is_ok(ops().rope_unpack_qkv_backward_bf16(d_dq16.ptr(), d_dk16.ptr(), d_dv16.ptr(),
                                                        d_dqkv16.ptr(), d_cos.ptr(), d_sin.ptr(),
                                                        s.B, s.T, s.NH, s.NKV, s.HD, dp)));
  expect_close(download(d_qkv16), qkv16, kBf16Tol, what + " bf16 qkv");
  expect_close(download(d_dq16), dq16, kBf16Tol, what + " bf16 dq");
  expect_close(download(d_dk16), dk16, kBf16Tol, what + " bf16 dk");
  expect_close(download(d_dv16), dv16, kBf16Tol, what + " bf16 dv");
}

TEST_P(LayersConformance, RopeMatchesHost) {
  for (bool positions : {false, true}) {
    rope_case({2, 7, 4, 2, 8, positions});
    rope_case({2, 7, 4, 4, 8, positions});    // no repeat (multi-head attention)
    rope_case({3, 40, 6, 1, 16, positions});  // one kv head for all
    rope_case({2, 65, 8, 2, 64, positions});
  }
}

// ---- Cross-entropy ----

// Targets in [0, V) with some ignored (negative) ones.
std::vector<int32_t> ce_targets(const CeShape& s) {
  auto t = random_ids(s.B * s.T, static_cast<int32_t>(s.V), 11);
  t[1] = -1;
  if (t.size() > 5) t[5] = -100;
  t.back() = static_cast<int32_t>(s.V - 1);
  return t;
}

void LayersConformance::crossentropy_case(const CeShape& s) {
  const std::string what = "crossentropy V=" + std::to_string(s.V) + " Vp=" + std::to_string(s.Vp);
  const int64_t BT = s.B * s.T;
  auto logits = randn(BT * s.Vp, 1, 3.0f);
  for (int64_t r = 0; r < BT; ++r) logits[r * s.Vp + r % s.V] += 40.0f;  // large logits stay finite
  const auto targets = ce_targets(s);
  const float dloss = 1.0f / static_cast<float>(BT);
  auto d_logits = upload(logits);
  auto d_targets = upload(targets);

  std::vector<float> losses(BT), lse(BT), dlogits(BT * s.Vp);
  std::vector<BFloat16> dlogits16(BT * s.Vp);
  ASSERT_TRUE(is_ok(host().crossentropy_forward(losses.data(), lse.data(), logits.data(),
                                                targets.data(), s.B, s.T, s.V, s.Vp)));
  ASSERT_TRUE(is_ok(host().crossentropy_forward_backward(
      losses.data(), dlogits.data(), logits.data(), targets.data(), dloss, s.B, s.T, s.V, s.Vp)));
  ASSERT_TRUE(is_ok(host().crossentropy_forward_backward_bf16(
      losses.data(), dlogits16.data(), logits.data(), targets.data(), dloss, s.B, s.T, s.V, s.Vp)));

  for (bool with_lse : {true, false}) {
    auto d_losses = upload(randn(BT, 2)), d_lse = upload(randn(BT, 3));
    ASSERT_TRUE(
        is_ok(ops().crossentropy_forward(d_losses.ptr(), with_lse ? d_lse.ptr() : nullptr,
                                         d_logits.ptr(), d_targets.ptr(), s.B, s.T, s.V, s.Vp)));
    const auto got = download(d_losses);
    expect_close(got, losses, kFp32Tol, what + " losses");
    if (with_lse) expect_close(download(d_lse), lse, kFp32Tol, what + " lse");
    EXPECT_EQ(got[1], 0.0f) << "an ignored target's loss";
  }

  // Into a separate (poisoned) buffer, then over the logits themselves.
  for (bool in_place : {false, true}) {
    auto d_losses = upload(randn(BT, 4));
    auto d_in = upload(logits);
    auto d_out = upload(randn(BT * s.Vp, 5));
    float* out = in_place ? d_in.ptr() : d_out.ptr();
    ASSERT_TRUE(is_ok(ops().crossentropy_forward_backward(
        d_losses.ptr(), out, d_in.ptr(), d_targets.ptr(), dloss, s.B, s.T, s.V, s.Vp)));
    const auto got = download(in_place ? d_in : d_out);
    const std::string how = in_place ? " in place" : "";
    expect_close(got, dlogits, kFp32Tol, what + how + " dlogits");
    expect_close(download(d_losses), losses, kFp32Tol, what + how + " fused losses");
    for (int64_t r = 0; r < BT; ++r) {
      for (int64_t v = 0; v < s.Vp; ++v) {
        if (targets[r] >= 0 && v < s.V) continue;
        ASSERT_EQ(got[r * s.Vp + v], 0.0f) << what << how << ": row " << r << " column " << v;
      }
    }
  }

  auto d_losses = upload(randn(BT, 6));
  auto d_dlogits16 = upload(to_bf16(randn(BT * s.Vp, 7)));
  ASSERT_TRUE(is_ok(ops().crossentropy_forward_backward_bf16(d_losses.ptr(), d_dlogits16.ptr(),
                                                             d_logits.ptr(), d_targets.ptr(), dloss,
                                                             s.B, s.T, s.V, s.Vp)));
  expect_close(download(d_dlogits16), dlogits16, kBf16Tol, what + " bf16 dlogits");
  expect_close(download(d_losses), losses, kFp32Tol, what + " bf16 losses");
}

TEST_P(LayersConformance, CrossEntropyMatchesHost) {
  crossentropy_case({2, 7, 50, 64});
  crossentropy_case({2, 7, 64, 64});       // no padding
  crossentropy_case({3, 11, 5000, 5056});  // rows longer than a block of threads
}

TEST_P(LayersConformance, CrossEntropyRejectsTargetOutsideVocab) {
  const CeShape s{2, 7, 50, 64};
  const int64_t BT = s.B * s.T;
  const auto logits = randn(BT * s.Vp, 1);
  auto targets = ce_targets(s);
  targets[1 * s.T + 4] = static_cast<int32_t>(s.V);
  targets[1 * s.T + 6] = static_cast<int32_t>(s.Vp + 100);
  auto d_logits = upload(logits);
  auto d_targets = upload(targets);
  auto d_losses = alloc<float>(BT);
  auto d_dlogits = alloc<float>(BT * s.Vp);
  std::vector<float> losses(BT), dlogits(BT * s.Vp);
  const Status h = host().crossentropy_forward(losses.data(), nullptr, logits.data(),
                                               targets.data(), s.B, s.T, s.V, s.Vp);
  const Status statuses[] = {
      ops().crossentropy_forward(d_losses.ptr(), nullptr, d_logits.ptr(), d_targets.ptr(), s.B, s.T,
                                 s.V, s.Vp),
      ops().crossentropy_forward_backward(d_losses.ptr(), d_dlogits.ptr(), d_logits.ptr(),
                                          d_targets.ptr(), 1.0f, s.B, s.T, s.V, s.Vp)};
  for (const Status& st : statuses) {
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
    EXPECT_NE(st.message().find("b=1"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("t=4"), std::string::npos) << st.message();
    EXPECT_EQ(st.message(), h.message());
  }
  // Vp < V is refused too, and the device stays usable afterwards.
  const Status narrow = ops().crossentropy_forward(d_losses.ptr(), nullptr, d_logits.ptr(),
                                                   d_targets.ptr(), s.B, s.T, s.Vp + 1, s.Vp);
  EXPECT_EQ(narrow.code(), StatusCode::kInvalidArgument) << narrow.to_string();
  auto d_good = upload(ce_targets(s));
  EXPECT_TRUE(is_ok(ops().crossentropy_forward(d_losses.ptr(), nullptr, d_logits.ptr(),
                                               d_good.ptr(), s.B, s.T, s.V, s.Vp)));
}

ZT_INSTANTIATE_OPS_CONFORMANCE(LayersConformance);

// ---- layer_math.h on the host: the device's per-element math ----

TEST(LayerMath, CephesExpIsTheCpuFastExpBitForBit) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> d(-100.0f, 100.0f);
  for (int i = 0; i < 200000; ++i) {
    const float x = d(rng);
    const float a = cuda::cephes_exp(x), b = cpu::fast_exp(x);
    ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << "x=" << x << ": " << a << " vs " << b;
  }
  EXPECT_TRUE(std::isnan(cuda::cephes_exp(NAN)));
  EXPECT_EQ(cuda::cephes_exp(-INFINITY), 0.0f);
}

// Σ exp over a row, split across 5 "threads" and combined, against the
// CPU's two passes (max, then the sum of fast_exp(x - max)).
float split_logsumexp(const std::vector<float>& row) {
  std::vector<cuda::MaxSum> parts(5, cuda::MaxSum{-INFINITY, 0.0f});
  for (size_t v = 0; v < row.size(); ++v) parts[v % 5] = cuda::max_sum_add(parts[v % 5], row[v]);
  cuda::MaxSum total = parts[0];
  for (size_t p = 1; p < parts.size(); ++p) total = cuda::max_sum_combine(total, parts[p]);
  return cuda::max_sum_log(total);
}
float two_pass_logsumexp(const std::vector<float>& row) {
  float maxv = -INFINITY;
  for (float x : row) maxv = x > maxv ? x : maxv;
  float sum = 0.0f;
  for (float x : row) sum += cpu::fast_exp(x - maxv);
  return maxv + std::log(sum);
}

TEST(LayerMath, MaxSumMatchesTwoPassLogSumExp) {
  auto row = randn(1000, 3, 4.0f);
  row[17] += 60.0f;
  EXPECT_NEAR(split_logsumexp(row), two_pass_logsumexp(row), 1e-5f * 64.0f);
  row[3] = -INFINITY;  // a masked logit adds nothing
  EXPECT_NEAR(split_logsumexp(row), two_pass_logsumexp(row), 1e-5f * 64.0f);
  auto nan_row = row;
  nan_row[500] = NAN;
  EXPECT_TRUE(std::isnan(split_logsumexp(nan_row)));
  auto inf_row = row;
  inf_row[2] = INFINITY;
  EXPECT_TRUE(std::isnan(split_logsumexp(inf_row)) && std::isnan(two_pass_logsumexp(inf_row)));
  const std::vector<float> masked(7, -INFINITY);
  EXPECT_TRUE(std::isnan(split_logsumexp(masked)) && std::isnan(two_pass_logsumexp(masked)));
}

}  // namespace
}  // namespace zerotrain::device::testing
