// The ops chained as a one-block GPT with tied embeddings, the way model/
// will use them: encoder -> layernorm -> qkv linear -> attention -> proj
// linear -> residual -> lm head (weight = wte) -> fused cross-entropy, and
// the backward in reverse. The mean loss must match a double composition of
// the reference ops, and d loss / d (wte, w_qkv, ln weight) must match double
// central differences; wte's gradient collects both the lm head's and the
// encoder's share through the accumulate-into-grad convention.
#include <gtest/gtest.h>

#include "device/cpu/kernels/ops.h"
#include "device/cpu/kernels/reference.h"

namespace zerotrain::device::cpu {
namespace {

using testing::expect_gradient_near;
using testing::random_floats;
using testing::to_double;
using testing::Vec;
namespace ref = testing::ref;

constexpr int B = 2, T = 5, C = 12, NH = 3, V = 17;

struct Params {
  std::vector<float> wte, wpe, lnw, lnb, wqkv, bqkv, wproj, bproj;
};

Params make_params() {
  Params p{random_floats(V * C, 1, 0.5f),     random_floats(T * C, 2, 0.3f),
           random_floats(C, 3, 0.2f),         random_floats(C, 4, 0.1f),
           random_floats(3 * C * C, 5, 0.3f), random_floats(3 * C, 6, 0.1f),
           random_floats(C * C, 7, 0.3f),     random_floats(C, 8, 0.1f)};
  for (float& w : p.lnw) w += 1.0f;
  return p;
}

const std::vector<int32_t> kTokens{3, 0, 16, 3, 5, 7, 3, 1, 9, 2};
const std::vector<int32_t> kTargets{0, 16, 5, 5, 9, 3, 1, 4, 12, 7};

// Mean loss in double; `wte`, `wqkv`, `lnw` may be overridden for FD.
double reference_loss(const Params& p, const Vec& wte, const Vec& wqkv, const Vec& lnw) {
  const int rows = B * T;
  Vec x = ref::encoder(kTokens, wte, to_double(p.wpe), B, T, C);
  Vec ln = ref::layernorm(x, lnw, to_double(p.lnb), rows, C);
  Vec qkv = ref::linear(ln, wqkv, to_double(p.bqkv), rows, C, 3 * C);
  Vec a = ref::attention(qkv, B, T, C, NH);
  Vec proj = ref::linear(a, to_double(p.wproj), to_double(p.bproj), rows, C, C);
  Vec r = ref::residual(x, proj);
  Vec logits = ref::linear(r, wte, {}, rows, C, V);
  double sum = 0;
  for (double l : ref::crossentropy(logits, kTargets, rows, V, V)) sum += l;
  return sum / rows;
}

struct Grads {
  float loss = 0;
  std::vector<float> dwte, dwqkv, dlnw;
};

Grads kernel_grads(const Params& p) {
  const int rows = B * T;
  std::vector<float> x(rows * C), ln(rows * C), mean(rows), rstd(rows), qkv(rows * 3 * C);
  std::vector<float> att(B * NH * T * T), a(rows * C), proj(rows * C), r(rows * C);
  std::vector<float> logits(rows * V), losses(rows);
  EXPECT_TRUE(
      encoder_forward(x.data(), kTokens.data(), p.wte.data(), p.wpe.data(), B, T, C, V).ok());
  layernorm_forward(ln.data(), mean.data(), rstd.data(), x.data(), p.lnw.data(), p.lnb.data(), B, T,
                    C);
  EXPECT_TRUE(
      linear_forward(qkv.data(), ln.data(), p.wqkv.data(), p.bqkv.data(), B, T, C, 3 * C).ok());
  EXPECT_TRUE(attention_forward(a.data(), att.data(), qkv.data(), B, T, C, NH).ok());
  EXPECT_TRUE(
      linear_forward(proj.data(), a.data(), p.wproj.data(), p.bproj.data(), B, T, C, C).ok());
  residual_forward(r.data(), x.data(), proj.data(), rows * C);
  EXPECT_TRUE(linear_forward(logits.data(), r.data(), p.wte.data(), nullptr, B, T, C, V).ok());
  // dlogits overwrite the logits in place; dloss = 1/rows for the mean.
  EXPECT_TRUE(crossentropy_forward_backward(losses.data(), logits.data(), logits.data(),
                                            kTargets.data(), 1.0f / rows, B, T, V, V)
                  .ok());
  Grads g{0, std::vector<float>(V * C, 0.0f), std::vector<float>(3 * C * C, 0.0f),
          std::vector<float>(C, 0.0f)};
  for (float l : losses) g.loss += l / rows;
  std::vector<float> dr(rows * C, 0.0f), dx(rows * C, 0.0f), dproj(rows * C, 0.0f);
  std::vector<float> da(rows * C, 0.0f), dqkv(rows * 3 * C, 0.0f), dln(rows * C, 0.0f);
  std::vector<float> dwpe(T * C, 0.0f), dlnb(C, 0.0f), dbqkv(3 * C, 0.0f);
  std::vector<float> dwproj(C * C, 0.0f), dbproj(C, 0.0f);
  EXPECT_TRUE(linear_backward(dr.data(), g.dwte.data(), nullptr, logits.data(), r.data(),
                              p.wte.data(), B, T, C, V)
                  .ok());
  residual_backward(dx.data(), dproj.data(), dr.data(), rows * C);
  EXPECT_TRUE(linear_backward(da.data(), dwproj.data(), dbproj.data(), dproj.data(), a.data(),
                              p.wproj.data(), B, T, C, C)
                  .ok());
  EXPECT_TRUE(attention_backward(dqkv.data(), da.data(), qkv.data(), att.data(), B, T, C, NH).ok());
  EXPECT_TRUE(linear_backward(dln.data(), g.dwqkv.data(), dbqkv.data(), dqkv.data(), ln.data(),
                              p.wqkv.data(), B, T, C, 3 * C)
                  .ok());
  layernorm_backward(dx.data(), g.dlnw.data(), dlnb.data(), dln.data(), x.data(), p.lnw.data(),
                     mean.data(), rstd.data(), B, T, C);
  encoder_backward(g.dwte.data(), dwpe.data(), dx.data(), kTokens.data(), B, T, C);
  return g;
}

TEST(Composition, OneBlockGptLossAndGradientsMatchDoubleReference) {
  const Params p = make_params();
  const Grads g = kernel_grads(p);
  const Vec wte = to_double(p.wte), wqkv = to_double(p.wqkv), lnw = to_double(p.lnw);
  EXPECT_NEAR(g.loss, reference_loss(p, wte, wqkv, lnw), 1e-5);
  expect_gradient_near([&](const Vec& v) { return reference_loss(p, v, wqkv, lnw); }, wte, g.dwte,
                       "dwte (tied: lm head + encoder)");
  expect_gradient_near([&](const Vec& v) { return reference_loss(p, wte, v, lnw); }, wqkv, g.dwqkv,
                       "dw_qkv");
  expect_gradient_near([&](const Vec& v) { return reference_loss(p, wte, wqkv, v); }, lnw, g.dlnw,
                       "dln_weight");
}

}  // namespace
}  // namespace zerotrain::device::cpu
