// Google Benchmark of the fused CPU AdamW step against a STREAM-like triad
// measured in the same run (AdamW is memory-bound: the target is >= 70% of
// the triad bandwidth, docs/architecture.md). Built as zt_adamw_bench by
// bench/CMakeLists.txt (part of the normal build; `make bench` runs it):
//   OMP_NUM_THREADS=2 build/bin/zt_adamw_bench
// Bytes per AdamW element: reads p, g, m, v and writes p, m, v = 28 B, plus
// 2 B for the optional 16-bit copy. Triad a = b + s*c moves 12 B (STREAM's
// count, write-allocate traffic not included). "of_triad" is the AdamW
// bytes/s over the triad bytes/s. Before timing, each SIMD level is checked
// bit for bit against the portable kernel, so a wrong kernel cannot report.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "device/cpu/aligned_buffer.h"
#include "device/cpu/cpu_features.h"
#include "optim/adam.h"

namespace zo = zerotrain::optim;
namespace zt = zerotrain::device::cpu;

namespace {

// 256 MiB per fp32 array (1 GiB for p, g, m, v): this VM reports the host's
// 480 MiB L3 and, when the host is quiet, 64 MiB arrays still run partly
// from it (zt_probe's triad sweep), which would flatter both AdamW and triad.
constexpr size_t kN = size_t{1} << 26;

void triad(float* a, const float* b, const float* c, float s, size_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) a[i] = b[i] + s * c[i];
}

// Best-of-5 triad bandwidth in bytes/s, measured once.
double triad_bandwidth() {
  static const double bw = [] {
    zt::AlignedBuffer<float> a(kN), b(kN), c(kN);
    for (size_t i = 0; i < kN; ++i) b[i] = 1.0f, c[i] = 2.0f;
    double best = 0.0;
    for (int r = 0; r < 5; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      triad(a.data(), b.data(), c.data(), 3.0f, kN);
      const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
      best = std::max(best, 12.0 * kN / dt.count());
    }
    return best;
  }();
  return bw;
}

bool matches_portable(zt::SimdLevel level) {
  const size_t n = 4099;
  std::vector<float> p1(n), p2(n), g(n), m1(n), m2(n), v1(n), v2(n);
  for (size_t i = 0; i < n; ++i) p1[i] = p2[i] = 0.01f * (i % 97), g[i] = 1e-3f * (i % 13) - 5e-3f;
  const zo::AdamOptions o{.lr = 1e-3, .weight_decay = 0.01};
  {
    zt::ScopedSimdLevel s(zt::SimdLevel::kPortable);
    if (!zo::adam_update(o, 3, {p1, g, m1, v1}).ok()) return false;
  }
  zt::ScopedSimdLevel s(level);
  if (!zo::adam_update(o, 3, {p2, g, m2, v2}).ok()) return false;
  return std::memcmp(p1.data(), p2.data(), n * 4) == 0 &&
         std::memcmp(v1.data(), v2.data(), n * 4) == 0;
}

// Args: SIMD level (0 portable, 1 avx2, 2 avx512), copy (0 none, 1 bf16).
void BM_AdamWStep(benchmark::State& state) {
  const auto level = static_cast<zt::SimdLevel>(state.range(0));
  const bool copy = state.range(1) != 0;
  zt::ScopedSimdLevel scoped(level);
  if (scoped.active() != level) return state.SkipWithError("SIMD level not available here");
  if (!matches_portable(level)) return state.SkipWithError("kernel disagrees with portable");
  zt::AlignedBuffer<float> p(kN), g(kN), m(kN), v(kN);
  zt::AlignedBuffer<zerotrain::BFloat16> p16(kN);
  for (size_t i = 0; i < kN; ++i) p[i] = 0.5f, g[i] = 1e-3f * static_cast<float>(i % 7);
  // The moments and the copy start as untouched zero pages: write them
  // before timing, or the first step's page faults (a training run pays
  // them once, at its first step) land in the measured time.
  std::memset(m.data(), 0, kN * sizeof(float));
  std::memset(v.data(), 0, kN * sizeof(float));
  std::memset(static_cast<void*>(p16.data()), 0, kN * sizeof(zerotrain::BFloat16));
  auto adam = zo::Adam::create({.lr = 1e-3, .weight_decay = 0.01});
  const zerotrain::Tensor copy_view = copy ? zerotrain::make_view(p16.span()) : zerotrain::Tensor{};
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    const auto s = adam->step({p.span(), g.span(), m.span(), v.span()}, copy_view);
    benchmark::DoNotOptimize(s.ok());
    benchmark::ClobberMemory();
  }
  const double bytes = (28.0 + (copy ? 2.0 : 0.0)) * kN;
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - t0;
  const double adam_bw = bytes * static_cast<double>(state.iterations()) / elapsed.count();
  state.counters["of_triad"] = adam_bw / triad_bandwidth();
  state.SetLabel(std::string(zt::simd_level_name(level)) + (copy ? " +bf16 copy" : ""));
}
BENCHMARK(BM_AdamWStep)
    ->ArgsProduct({{0, 1, 2}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_Triad(benchmark::State& state) {
  zt::AlignedBuffer<float> a(kN), b(kN), c(kN);
  std::memset(a.data(), 0, kN * sizeof(float));  // fault its pages in before timing
  for (auto _ : state) {
    triad(a.data(), b.data(), c.data(), 3.0f, kN);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(12 * kN) * state.iterations());
}
BENCHMARK(BM_Triad)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
