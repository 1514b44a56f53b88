// The device's bf16 GEMM ceiling (gemm_ceiling.h).
#include "train/gemm_ceiling.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "core/half.h"
#include "device/ops.h"

namespace zerotrain::bench {

StatusOr<GemmCeiling> measure_gemm_ceiling(device::Device& d, int64_t n, int warmup, int runs) {
  if (n < 1 || runs < 1) return invalid_argument("gemm ceiling: n and runs must be >= 1");
  const size_t count = static_cast<size_t>(n * n);
  std::vector<BFloat16> host(count);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (BFloat16& x : host) x = to_bfloat16(u(rng));
  const auto cat = device::MemoryCategory::kBuffers;
  ZT_ASSIGN_OR_RETURN(device::Buffer a, d.allocate(count * 2, cat, "gemm ceiling A"));
  ZT_ASSIGN_OR_RETURN(device::Buffer b, d.allocate(count * 2, cat, "gemm ceiling B"));
  ZT_ASSIGN_OR_RETURN(device::Buffer c, d.allocate(count * 2, cat, "gemm ceiling C"));
  ZT_RETURN_IF_ERROR(d.copy(a.data(), host.data(), count * 2));
  std::reverse(host.begin(), host.end());
  ZT_RETURN_IF_ERROR(d.copy(b.data(), host.data(), count * 2));
  const device::MatmulDesc desc{.m = n, .n = n, .k = n};
  std::vector<double> seconds;
  for (int i = 0; i < warmup + runs; ++i) {
    ZT_RETURN_IF_ERROR(d.synchronize());
    const auto t0 = std::chrono::steady_clock::now();
    ZT_RETURN_IF_ERROR(
        d.ops().matmul_bf16(desc, a.as<BFloat16>(), b.as<BFloat16>(), nullptr, c.as<BFloat16>()));
    ZT_RETURN_IF_ERROR(d.synchronize());
    if (i >= warmup)
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return GemmCeiling{.device = d.name(),
                     .n = n,
                     .runs = runs,
                     .median_seconds = seconds[seconds.size() / 2],
                     .best_seconds = seconds.front()};
}

nlohmann::json gemm_ceiling_json(const GemmCeiling& g) {
  return {{"bench", "gemm_ceiling"}, {"device", g.device},           {"n", g.n},
          {"runs", g.runs},          {"median_s", g.median_seconds}, {"best_s", g.best_seconds},
          {"tflops", g.tflops()}};
}

}  // namespace zerotrain::bench
