// The Llama family's ops (RMSNorm, RoPE with grouped-query packing,
// SwiGLU, the embedding without positions): forward against double
// references written from Hugging Face's formulas (LlamaRMSNorm,
// apply_rotary_pos_emb with rotate_half, repeat_kv, F.silu), backward
// against double-precision central finite differences of Σ w·out.
#include <gtest/gtest.h>

#include <cmath>

#include "device/cpu/kernels/ops.h"
#include "device/cpu/kernels/reference.h"

namespace zerotrain::device::cpu {
namespace {

using testing::dot;
using testing::expect_all_near;
using testing::expect_gradient_near;
using testing::random_floats;
using testing::to_double;
using testing::Vec;

constexpr int B = 2, T = 5, C = 12;

Vec rmsnorm_ref(const Vec& x, const Vec& w, int rows, int n, double eps) {
  Vec out(x.size());
  for (int r = 0; r < rows; ++r) {
    double ss = 0;
    for (int c = 0; c < n; ++c) ss += x[r * n + c] * x[r * n + c];
    const double s = 1.0 / std::sqrt(ss / n + eps);
    for (int c = 0; c < n; ++c) out[r * n + c] = w[c] * x[r * n + c] * s;
  }
  return out;
}

TEST(RmsNorm, ForwardAndBackwardMatchDoubleReference) {
  const float eps = 1e-5f;
  auto x = random_floats(B * T * C, 1, 2.0f), w = random_floats(C, 2);
  for (float& v : x) v += 1.5f;  // a nonzero mean: RMSNorm must not centre
  std::vector<float> out(B * T * C), rstd(B * T);
  rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), B * T, C, eps);
  const Vec xd = to_double(x), wd = to_double(w);
  expect_all_near(out, rmsnorm_ref(xd, wd, B * T, C, eps), 1e-5, "out");

  auto dout = random_floats(B * T * C, 3);
  std::vector<float> dx(B * T * C, 0.5f), dw(C, 0.25f);  // backward adds
  rmsnorm_backward(dx.data(), dw.data(), dout.data(), x.data(), w.data(), rstd.data(), B * T, C);
  for (float& v : dx) v -= 0.5f;
  for (float& v : dw) v -= 0.25f;
  expect_gradient_near([&](const Vec& v) { return dot(dout, rmsnorm_ref(v, wd, B * T, C, eps)); },
                       xd, dx, "dx");
  expect_gradient_near([&](const Vec& v) { return dot(dout, rmsnorm_ref(xd, v, B * T, C, eps)); },
                       wd, dw, "dw");
}

// HF: q_embed = q·cos + rotate_half(q)·sin, rotate_half(x) = cat(−x2, x1),
// cos/sin = cat(freqs, freqs); then repeat_kv for k and v.
struct RopeShape {
  int NH, NKV, HD;
};

Vec rotate_ref(const Vec& x, int t, int heads, int hd, const Vec& cos, const Vec& sin) {
  Vec out(heads * hd);
  const int half = hd / 2;
  for (int h = 0; h < heads; ++h) {
    for (int d = 0; d < hd; ++d) {
      const double xd = x[h * hd + d];
      const double rot = d < half ? -x[h * hd + d + half] : x[h * hd + d - half];
      out[h * hd + d] = xd * cos[t * half + d % half] + rot * sin[t * half + d % half];
    }
  }
  return out;
}

Vec pack_ref(const Vec& q, const Vec& k, const Vec& v, const Vec& cos, const Vec& sin,
             const RopeShape& s) {
  const int Cq = s.NH * s.HD, Ck = s.NKV * s.HD, rep = s.NH / s.NKV;
  Vec out(B * T * 3 * Cq);
  for (int i = 0; i < B * T; ++i) {
    const int t = i % T;
    const Vec qi(q.begin() + i * Cq, q.begin() + (i + 1) * Cq);
    const Vec ki(k.begin() + i * Ck, k.begin() + (i + 1) * Ck);
    const Vec qr = rotate_ref(qi, t, s.NH, s.HD, cos, sin);
    const Vec kr = rotate_ref(ki, t, s.NKV, s.HD, cos, sin);
    for (int h = 0; h < s.NH; ++h) {
      for (int d = 0; d < s.HD; ++d) {
        out[i * 3 * Cq + h * s.HD + d] = qr[h * s.HD + d];
        out[i * 3 * Cq + Cq + h * s.HD + d] = kr[(h / rep) * s.HD + d];
        out[i * 3 * Cq + 2 * Cq + h * s.HD + d] = v[i * Ck + (h / rep) * s.HD + d];
      }
    }
  }
  return out;
}

class Rope : public ::testing::TestWithParam<RopeShape> {};

TEST_P(Rope, PackMatchesRotateHalfAndRepeatKvAndBackwardIsItsTranspose) {
  const RopeShape s = GetParam();
  const int Cq = s.NH * s.HD, Ck = s.NKV * s.HD, half = s.HD / 2;
  auto q = random_floats(B * T * Cq, 4), k = random_floats(B * T * Ck, 5),
       v = random_floats(B * T * Ck, 6);
  std::vector<float> cos(T * half), sin(T * half);
  for (int t = 0; t < T; ++t) {
    for (int i = 0; i < half; ++i) {
      const double a = t * std::pow(10000.0, -2.0 * i / s.HD);
      cos[t * half + i] = static_cast<float>(std::cos(a));
      sin[t * half + i] = static_cast<float>(std::sin(a));
    }
  }
  std::vector<float> qkv(B * T * 3 * Cq);
  rope_pack_qkv(qkv.data(), q.data(), k.data(), v.data(), cos.data(), sin.data(), B, T, s.NH, s.NKV,
                s.HD);
  const Vec qd = to_double(q), kd = to_double(k), vd = to_double(v), cd = to_double(cos),
            sd = to_double(sin);
  expect_all_near(qkv, pack_ref(qd, kd, vd, cd, sd, s), 1e-6, "qkv");

  auto dqkv = random_floats(B * T * 3 * Cq, 7);
  // Overwritten: stale values must not leak in.
  std::vector<float> dq(B * T * Cq, 9.0f), dk(B * T * Ck, 9.0f), dv(B * T * Ck, 9.0f);
  rope_unpack_qkv_backward(dq.data(), dk.data(), dv.data(), dqkv.data(), cos.data(), sin.data(), B,
                           T, s.NH, s.NKV, s.HD);
  expect_gradient_near([&](const Vec& x) { return dot(dqkv, pack_ref(x, kd, vd, cd, sd, s)); }, qd,
                       dq, "dq");
  expect_gradient_near([&](const Vec& x) { return dot(dqkv, pack_ref(qd, x, vd, cd, sd, s)); }, kd,
                       dk, "dk");
  expect_gradient_near([&](const Vec& x) { return dot(dqkv, pack_ref(qd, kd, x, cd, sd, s)); }, vd,
                       dv, "dv");
}

// Multi-head (NKV = NH), grouped (2 query heads a kv head) and multi-query.
INSTANTIATE_TEST_SUITE_P(Heads, Rope,
                         ::testing::Values(RopeShape{4, 4, 6}, RopeShape{4, 2, 6},
                                           RopeShape{6, 1, 4}));

TEST(SwiGlu, ForwardAndBackwardMatchDoubleReference) {
  constexpr int N = 97;
  auto gate = random_floats(N, 8, 3.0f), up = random_floats(N, 9);
  std::vector<float> out(N);
  swiglu_forward(out.data(), gate.data(), up.data(), N);
  auto ref = [](const Vec& g, const Vec& u) {
    Vec o(g.size());
    for (size_t i = 0; i < g.size(); ++i) o[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    return o;
  };
  const Vec gd = to_double(gate), ud = to_double(up);
  expect_all_near(out, ref(gd, ud), 1e-6, "out");
  auto dout = random_floats(N, 10);
  std::vector<float> dgate(N, 9.0f), dup(N, 9.0f);  // overwritten
  swiglu_backward(dgate.data(), dup.data(), dout.data(), gate.data(), up.data(), N);
  expect_gradient_near([&](const Vec& x) { return dot(dout, ref(x, ud)); }, gd, dgate, "dgate");
  expect_gradient_near([&](const Vec& x) { return dot(dout, ref(gd, x)); }, ud, dup, "dup");
}

// The bf16 Llama path's forms are the fp32 kernels above (each checked
// against its double reference) on the widened bf16 inputs, every output
// rounded once to bf16: equal bit for bit, over shapes with GQA, packed
// positions and a SwiGLU length past its 1024-element blocks.
std::vector<BFloat16> rounded16(const std::vector<float>& v) {
  std::vector<BFloat16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = to_bfloat16(v[i]);
  return out;
}
std::vector<float> widened(const std::vector<BFloat16>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = to_float(v[i]);
  return out;
}

TEST(Bf16Forms, AreTheFp32KernelsOnWidenedInputsRoundedOnce) {
  // RMSNorm: fp32 input, bf16 output, the same rstd.
  auto x = random_floats(B * T * C, 31, 2.0f), w = random_floats(C, 32);
  std::vector<float> n32(x.size()), rstd32(B * T), rstd16(B * T);
  std::vector<BFloat16> n16(x.size());
  rmsnorm_forward(n32.data(), rstd32.data(), x.data(), w.data(), B * T, C, 1e-6f);
  rmsnorm_forward_bf16(n16.data(), rstd16.data(), x.data(), w.data(), B * T, C, 1e-6f);
  EXPECT_EQ(n16, rounded16(n32));
  EXPECT_EQ(rstd16, rstd32);

  // RoPE (2 query heads a kv head, packed positions restarting at t = 3).
  const int NH = 4, NKV = 2, HD = 6, Cq = NH * HD, Ck = NKV * HD, half = HD / 2;
  const auto q16 = rounded16(random_floats(B * T * Cq, 33)),
             k16 = rounded16(random_floats(B * T * Ck, 34)),
             v16 = rounded16(random_floats(B * T * Ck, 35));
  std::vector<float> cos(T * half), sin(T * half);
  for (int i = 0; i < T * half; ++i) {
    cos[i] = std::cos(0.3f * static_cast<float>(i));
    sin[i] = std::sin(0.3f * static_cast<float>(i));
  }
  std::vector<int32_t> pos(B * T);
  for (int i = 0; i < B * T; ++i) pos[i] = i % T < 3 ? i % T : i % T - 3;
  std::vector<float> qkv32(B * T * 3 * Cq);
  std::vector<BFloat16> qkv16(qkv32.size());
  rope_pack_qkv(qkv32.data(), widened(q16).data(), widened(k16).data(), widened(v16).data(),
                cos.data(), sin.data(), B, T, NH, NKV, HD, pos.data());
  rope_pack_qkv_bf16(qkv16.data(), q16.data(), k16.data(), v16.data(), cos.data(), sin.data(), B, T,
                     NH, NKV, HD, pos.data());
  EXPECT_EQ(qkv16, rounded16(qkv32));
  const auto dqkv16 = rounded16(random_floats(B * T * 3 * Cq, 36));
  std::vector<float> dq(B * T * Cq), dk(B * T * Ck), dv(B * T * Ck);
  std::vector<BFloat16> dq16(dq.size()), dk16(dk.size()), dv16(dv.size());
  rope_unpack_qkv_backward(dq.data(), dk.data(), dv.data(), widened(dqkv16).data(), cos.data(),
                           sin.data(), B, T, NH, NKV, HD, pos.data());
  rope_unpack_qkv_backward_bf16(dq16.data(), dk16.data(), dv16.data(), dqkv16.data(), cos.data(),
                                sin.data(), B, T, NH, NKV, HD, pos.data());
  EXPECT_EQ(dq16, rounded16(dq));
  EXPECT_EQ(dk16, rounded16(dk));
  EXPECT_EQ(dv16, rounded16(dv));

  // SwiGLU: bf16 gate and up, fp32 dout.
  constexpr int N = 2500;
  const auto g16 = rounded16(random_floats(N, 37, 3.0f)), u16 = rounded16(random_floats(N, 38));
  const auto dout = random_floats(N, 39);
  std::vector<float> act(N), dg(N), du(N);
  std::vector<BFloat16> act16(N), dg16(N), du16(N);
  swiglu_forward(act.data(), widened(g16).data(), widened(u16).data(), N);
  swiglu_forward_bf16(act16.data(), g16.data(), u16.data(), N);
  EXPECT_EQ(act16, rounded16(act));
  swiglu_backward(dg.data(), du.data(), dout.data(), widened(g16).data(), widened(u16).data(), N);
  swiglu_backward_bf16(dg16.data(), du16.data(), dout.data(), g16.data(), u16.data(), N);
  EXPECT_EQ(dg16, rounded16(dg));
  EXPECT_EQ(du16, rounded16(du));
}

TEST(Embedding, WithoutPositionsIsTheTokenRowsAndScatterAdds) {
  constexpr int V = 17;
  std::vector<int32_t> tok{3, 0, 16, 3, 5, 7, 3, 1, 9, 2};
  auto wte = random_floats(V * C, 11);
  std::vector<float> out(B * T * C);
  ASSERT_TRUE(encoder_forward(out.data(), tok.data(), wte.data(), nullptr, B, T, C, V).ok());
  for (int i = 0; i < B * T; ++i)
    for (int c = 0; c < C; ++c) ASSERT_EQ(out[i * C + c], wte[tok[i] * C + c]);
  auto dout = random_floats(B * T * C, 12);
  std::vector<float> dwte(V * C, 0.0f);
  encoder_backward(dwte.data(), nullptr, dout.data(), tok.data(), B, T, C);
  for (int c = 0; c < C; ++c) {  // token 3 at positions 0, 3 and 6
    EXPECT_FLOAT_EQ(dwte[3 * C + c], dout[0 * C + c] + dout[3 * C + c] + dout[6 * C + c]);
  }
}

}  // namespace
}  // namespace zerotrain::device::cpu
