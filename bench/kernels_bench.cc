// Google Benchmark of the CPU kernels at GPT-2 small shapes (C=768, NH=12,
// V=50257, T=256): GEMM GFLOP/s fp32 vs bf16 for each transformer product,
// and the time of every op's forward and backward. Built as zt_kernels_bench by
// bench/CMakeLists.txt (part of the normal build; `make bench` runs it):
//   OMP_NUM_THREADS=2 build/bin/zt_kernels_bench --benchmark_filter=Matmul
// GEMM FLOPs = 2·M·N·K (one multiply and one add per term); GFLOP/s is the
// "flops" counter. Each case validates one output element against a double
// dot product before timing, so a broken kernel cannot report a fast time.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "device/cpu/kernels/ops.h"

namespace kc = zerotrain::device::cpu;

namespace {

constexpr int64_t kC = 768, kNH = 12, kV = 50257, kVp = 50304, kT = 256;

std::vector<float> randn(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 0.5f);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

void check(const zerotrain::Status& s, benchmark::State& state) {
  if (!s.ok()) state.SkipWithError(s.to_string().c_str());
}

// Arguments: M, N, K, trans_a, trans_b (the products of forward and backward).
void matmul_case(benchmark::State& state, bool bf16) {
  const kc::MatmulDesc d{.m = state.range(0),
                         .n = state.range(1),
                         .k = state.range(2),
                         .trans_a = state.range(3) != 0,
                         .trans_b = state.range(4) != 0};
  auto a = randn(d.m * d.k, 1), b = randn(d.k * d.n, 2);
  std::vector<float> c(d.m * d.n);
  std::vector<zerotrain::BFloat16> ah(a.size()), bh(b.size());
  kc::bf16_from_float_array(ah.data(), a.data(), a.size());
  kc::bf16_from_float_array(bh.data(), b.data(), b.size());
  auto run = [&] {
    return bf16 ? kc::matmul_bf16(d, ah.data(), bh.data(), nullptr, c.data())
                : kc::matmul(d, a.data(), b.data(), nullptr, c.data());
  };
  check(run(), state);
  double want = 0;  // validate C[0,0]
  for (int64_t k = 0; k < d.k; ++k) {
    const double x = d.trans_a ? a[k * d.m] : a[k];
    const double y = d.trans_b ? b[k] : b[k * d.n];
    want += x * y;
  }
  if (std::fabs(c[0] - want) > 0.02 * std::sqrt(static_cast<double>(d.k))) {
    state.SkipWithError("validation of C[0,0] failed");
  }
  for (auto _ : state) check(run(), state);
  state.counters["flops"] =
      benchmark::Counter(2.0 * d.m * d.n * d.k * state.iterations(), benchmark::Counter::kIsRate);
  auto impl = kc::matmul_impl_name(d, false, bf16 ? kc::GemmInput::kBf16 : kc::GemmInput::kF32);
  state.SetLabel(impl.ok() ? *impl : "?");
}

void BM_MatmulF32(benchmark::State& state) { matmul_case(state, false); }
void BM_MatmulBf16(benchmark::State& state) { matmul_case(state, true); }

// BT = 1024 rows: qkv, attn proj, fc, fc proj, lm head; then the backward forms.
void gemm_shapes(benchmark::internal::Benchmark* b) {
  const int64_t bt = 4 * kT;
  b->Args({bt, 3 * kC, kC, 0, 1})->Args({bt, kC, kC, 0, 1})->Args({bt, 4 * kC, kC, 0, 1});
  b->Args({bt, kC, 4 * kC, 0, 1})->Args({bt, kVp, kC, 0, 1});
  b->Args({bt, kC, 4 * kC, 0, 0})->Args({4 * kC, kC, bt, 1, 0});  // dinp, dweight of fc
  b->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_MatmulF32)->Apply(gemm_shapes);
BENCHMARK(BM_MatmulBf16)->Apply(gemm_shapes);

void BM_AttentionForward(benchmark::State& state) {
  const int64_t B = 4;
  auto qkv = randn(B * kT * 3 * kC, 3);
  std::vector<float> out(B * kT * kC), att(B * kNH * kT * kT);
  for (auto _ : state) {
    check(kc::attention_forward(out.data(), att.data(), qkv.data(), B, kT, kC, kNH), state);
  }
}
BENCHMARK(BM_AttentionForward)->Unit(benchmark::kMillisecond);

void BM_AttentionBackward(benchmark::State& state) {
  const int64_t B = 4;
  auto qkv = randn(B * kT * 3 * kC, 4), dout = randn(B * kT * kC, 5);
  std::vector<float> out(B * kT * kC), att(B * kNH * kT * kT), dqkv(qkv.size());
  check(kc::attention_forward(out.data(), att.data(), qkv.data(), B, kT, kC, kNH), state);
  for (auto _ : state) {
    check(kc::attention_backward(dqkv.data(), dout.data(), qkv.data(), att.data(), B, kT, kC, kNH),
          state);
  }
}
BENCHMARK(BM_AttentionBackward)->Unit(benchmark::kMillisecond);

void BM_AttentionLseForwardBackward(benchmark::State& state) {
  const int64_t B = 4;
  auto qkv = randn(B * kT * 3 * kC, 4), dout = randn(B * kT * kC, 5);
  std::vector<float> out(B * kT * kC), lse(B * kNH * kT), dqkv(qkv.size());
  for (auto _ : state) {
    check(kc::attention_forward_lse(out.data(), lse.data(), qkv.data(), B, kT, kC, kNH), state);
    check(kc::attention_backward_lse(dqkv.data(), dout.data(), qkv.data(), lse.data(), B, kT, kC,
                                     kNH),
          state);
  }
}
BENCHMARK(BM_AttentionLseForwardBackward)->Unit(benchmark::kMillisecond);

// Sliding-window attention (Mistral): T = 2048, window W (W = T: plain
// causal). Row blocks skip the keys before their window, so time falls
// with W.
void BM_AttentionSlidingWindow(benchmark::State& state) {
  const int64_t B = 1, T = state.range(0), W = state.range(1);
  auto qkv = randn(B * T * 3 * kC, 4), dout = randn(B * T * kC, 5);
  std::vector<float> out(B * T * kC), lse(B * kNH * T), dqkv(qkv.size());
  std::vector<int32_t> first(B * T);
  for (int64_t t = 0; t < T; ++t) first[t] = static_cast<int32_t>(std::max<int64_t>(0, t - W + 1));
  for (auto _ : state) {
    check(kc::attention_forward_lse(out.data(), lse.data(), qkv.data(), B, T, kC, kNH,
                                    first.data()),
          state);
    check(kc::attention_backward_lse(dqkv.data(), dout.data(), qkv.data(), lse.data(), B, T, kC,
                                     kNH, first.data()),
          state);
  }
}
BENCHMARK(BM_AttentionSlidingWindow)
    ->Args({2048, 2048})
    ->Args({2048, 512})
    ->Args({2048, 128})
    ->Unit(benchmark::kMillisecond);

void BM_LayerNorm(benchmark::State& state) {
  const int64_t B = 4;
  auto x = randn(B * kT * kC, 6), w = randn(kC, 7), b = randn(kC, 8), g = randn(x.size(), 9);
  std::vector<float> out(x.size()), mean(B * kT), rstd(B * kT), dx(x.size()), dw(kC), db(kC);
  for (auto _ : state) {
    kc::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), B, kT,
                          kC);
    kc::layernorm_backward(dx.data(), dw.data(), db.data(), g.data(), x.data(), w.data(),
                           mean.data(), rstd.data(), B, kT, kC);
  }
}
BENCHMARK(BM_LayerNorm)->Unit(benchmark::kMillisecond);

void BM_Gelu(benchmark::State& state) {
  const int64_t n = 4 * kT * 4 * kC;
  auto x = randn(n, 10), g = randn(n, 11);
  std::vector<float> out(n), dx(n);
  for (auto _ : state) {
    kc::gelu_forward(out.data(), x.data(), n);
    kc::gelu_backward(dx.data(), x.data(), g.data(), n);
  }
}
BENCHMARK(BM_Gelu)->Unit(benchmark::kMillisecond);

void BM_CrossEntropyFused(benchmark::State& state) {
  const int64_t B = 4;
  auto logits = randn(B * kT * kVp, 12);
  std::vector<int32_t> targets(B * kT);
  for (size_t i = 0; i < targets.size(); ++i) targets[i] = static_cast<int32_t>((i * 7919) % kV);
  std::vector<float> losses(B * kT), dlogits(logits.size());
  for (auto _ : state) {
    check(kc::crossentropy_forward_backward(losses.data(), dlogits.data(), logits.data(),
                                            targets.data(), 1.0f / (B * kT), B, kT, kV, kVp),
          state);
  }
}
BENCHMARK(BM_CrossEntropyFused)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
