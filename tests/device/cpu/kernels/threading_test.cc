// Threads: matmul called concurrently from several std::threads gives the
// same results as alone (the thread-safety the header promises), the ops
// give the same results at 1 and 3 OpenMP threads (encoder backward bit
// for bit, as documented; the rest within fp32 rounding), and repeated
// runs at a fixed thread count are bit-identical (bit-exact resume needs it).
#include <gtest/gtest.h>
#include <omp.h>

#include <thread>

#include "device/cpu/kernels/ops.h"
#include "device/cpu/kernels/reference.h"

namespace zerotrain::device::cpu {
namespace {

using testing::random_floats;

TEST(Threading, ConcurrentMatmulsMatchSerialResults) {
  constexpr int kThreads = 4;
  const MatmulDesc descs[2] = {{.m = 31, .n = 45, .k = 27, .trans_b = true},
                               {.m = 64, .n = 48, .k = 80, .trans_a = true, .beta = 1.0f}};
  std::vector<std::vector<float>> a(kThreads), b(kThreads), want(kThreads), got(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    const MatmulDesc& d = descs[t % 2];
    a[t] = random_floats(d.m * d.k, 100 + t);
    b[t] = random_floats(d.k * d.n, 200 + t);
    want[t].assign(d.m * d.n, 0.0f);
    for (int rep = 0; rep < 10; ++rep) {
      ASSERT_TRUE(matmul(d, a[t].data(), b[t].data(), nullptr, want[t].data()).ok());
    }
  }
  std::vector<std::thread> pool;
  std::vector<int> ok(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      const MatmulDesc& d = descs[t % 2];
      got[t].assign(d.m * d.n, 0.0f);
      bool all_ok = true;
      for (int rep = 0; rep < 10; ++rep) {
        all_ok &= matmul(d, a[t].data(), b[t].data(), nullptr, got[t].data()).ok();
      }
      ok[t] = all_ok;
    });
  }
  for (auto& th : pool) th.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(ok[t]) << "thread " << t;
    for (size_t i = 0; i < want[t].size(); ++i) {
      ASSERT_NEAR(got[t][i], want[t][i], 1e-5 * (1 + std::fabs(want[t][i]))) << t << " " << i;
    }
  }
}

// Runs fn at `threads` OpenMP threads, restoring the previous count.
template <typename Fn>
void with_threads(int threads, Fn&& fn) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  fn();
  omp_set_num_threads(before);
}

void expect_close(const std::vector<float>& x, const std::vector<float>& y, const char* what) {
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_NEAR(x[i], y[i], 1e-5 * (1 + std::fabs(x[i]))) << what << " " << i;
  }
}

TEST(Threading, OpsAgreeAtOneAndThreeThreads) {
  constexpr int B = 3, T = 7, C = 24, NH = 4, V = 29;
  std::vector<int32_t> tok(B * T);
  for (int i = 0; i < B * T; ++i) tok[i] = (i * 5) % 7;  // many repeats
  auto dout = random_floats(B * T * C, 1), x = random_floats(B * T * C, 2);
  auto w = random_floats(C, 3), qkv = random_floats(B * T * 3 * C, 4);
  auto g3 = random_floats(B * T * C, 5);
  struct Out {
    std::vector<float> dwte, dwpe, dx, dw, db, att_out, dqkv;
  } r[2];
  for (int k = 0; k < 2; ++k) {
    with_threads(k == 0 ? 1 : 3, [&] {
      Out& o = r[k];
      o.dwte.assign(V * C, 0.0f);
      o.dwpe.assign(T * C, 0.0f);
      encoder_backward(o.dwte.data(), o.dwpe.data(), dout.data(), tok.data(), B, T, C);
      std::vector<float> ln(B * T * C), mean(B * T), rstd(B * T);
      layernorm_forward(ln.data(), mean.data(), rstd.data(), x.data(), w.data(), w.data(), B, T, C);
      o.dx.assign(B * T * C, 0.0f);
      o.dw.assign(C, 0.0f);
      o.db.assign(C, 0.0f);
      layernorm_backward(o.dx.data(), o.dw.data(), o.db.data(), dout.data(), x.data(), w.data(),
                         mean.data(), rstd.data(), B, T, C);
      std::vector<float> att(B * NH * T * T);
      o.att_out.assign(B * T * C, 0.0f);
      o.dqkv.assign(B * T * 3 * C, 0.0f);
      ASSERT_TRUE(attention_forward(o.att_out.data(), att.data(), qkv.data(), B, T, C, NH).ok());
      ASSERT_TRUE(
          attention_backward(o.dqkv.data(), g3.data(), qkv.data(), att.data(), B, T, C, NH).ok());
    });
  }
  EXPECT_EQ(r[0].dwte, r[1].dwte) << "encoder backward must be bitwise thread-count independent";
  EXPECT_EQ(r[0].dwpe, r[1].dwpe);
  expect_close(r[0].dx, r[1].dx, "layernorm dinp");
  expect_close(r[0].dw, r[1].dw, "layernorm dweight");
  expect_close(r[0].db, r[1].db, "layernorm dbias");
  expect_close(r[0].att_out, r[1].att_out, "attention out");
  expect_close(r[0].dqkv, r[1].dqkv, "attention dqkv");
}

TEST(Threading, RepeatedRunsAreBitIdentical) {
  constexpr int B = 2, T = 70, C = 24, NH = 2, OC = 40;
  auto x = random_floats(B * T * C, 11), w = random_floats(OC * C, 12);
  auto dy = random_floats(B * T * OC, 13), qkv = random_floats(B * T * 3 * C, 14);
  auto da = random_floats(B * T * C, 15);
  auto run = [&] {
    std::vector<float> y(B * T * OC), dx(B * T * C, 0.0f), dw(OC * C, 0.0f), db(OC, 0.0f);
    std::vector<float> a(B * T * C), att(B * NH * T * T), dqkv(B * T * 3 * C, 0.0f);
    EXPECT_TRUE(linear_forward(y.data(), x.data(), w.data(), nullptr, B, T, C, OC).ok());
    EXPECT_TRUE(
        linear_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), B, T, C, OC)
            .ok());
    EXPECT_TRUE(attention_forward(a.data(), att.data(), qkv.data(), B, T, C, NH).ok());
    EXPECT_TRUE(
        attention_backward(dqkv.data(), da.data(), qkv.data(), att.data(), B, T, C, NH).ok());
    std::vector<float> all;
    for (const auto* v : {&y, &dx, &dw, &db, &a, &dqkv})
      all.insert(all.end(), v->begin(), v->end());
    return all;
  };
  const auto first = run();
  for (int rep = 0; rep < 3; ++rep) ASSERT_EQ(run(), first) << "run " << rep + 1 << " differs";
}

}  // namespace
}  // namespace zerotrain::device::cpu
