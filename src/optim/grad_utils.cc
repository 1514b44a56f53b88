// Gradient utilities: block-parallel, deterministic reductions and dispatch.
#include "optim/grad_utils.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "optim/grad_kernels.h"
#include "device/cpu/cpu_features.h"

namespace zerotrain::optim {
namespace detail {

bool any_nonfinite_portable(const float* x, size_t n) {
  bool hit = false;
  for (size_t i = 0; i < n; ++i) {
    hit |= (std::bit_cast<uint32_t>(x[i]) & 0x7f800000u) == 0x7f800000u;
  }
  return hit;
}

double sum_squares_portable(const float* x, size_t n) {
  double acc = 0.0;
  for (size_t i = 0; i < n; ++i) acc += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return acc;
}

}  // namespace detail

namespace {

// Fixed block size: the unit of work and of summation order.
constexpr size_t kBlock = size_t{1} << 15;

struct Kernels {
  bool (*any_nonfinite)(const float*, size_t);
  double (*sum_squares)(const float*, size_t);
};

Kernels kernels() {
#if defined(__x86_64__)
  switch (device::cpu::active_simd_level()) {
    case device::cpu::SimdLevel::kAvx512:
      return {detail::any_nonfinite_avx512, detail::sum_squares_avx512};
    case device::cpu::SimdLevel::kAvx2:
      return {detail::any_nonfinite_avx2, detail::sum_squares_avx2};
    case device::cpu::SimdLevel::kPortable:
      break;
  }
#endif
  return {detail::any_nonfinite_portable, detail::sum_squares_portable};
}

int64_t block_count(size_t n) { return static_cast<int64_t>((n + kBlock - 1) / kBlock); }

template <typename T>
bool any_16bit_nonfinite(std::span<const T> x, uint16_t exp_mask) {
  bool hit = false;
  for (const T& v : x) hit |= (v.bits & exp_mask) == exp_mask;
  return hit;
}

}  // namespace

bool has_inf_or_nan(std::span<const float> x) {
  const Kernels k = kernels();
  const int64_t blocks = block_count(x.size());
  bool hit = false;
#pragma omp parallel for schedule(static) reduction(|| : hit) if (blocks > 4)
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t off = static_cast<size_t>(b) * kBlock;
    hit = hit || k.any_nonfinite(x.data() + off, std::min(kBlock, x.size() - off));
  }
  return hit;
}

bool has_inf_or_nan(std::span<const Half> x) { return any_16bit_nonfinite(x, 0x7c00); }
bool has_inf_or_nan(std::span<const BFloat16> x) { return any_16bit_nonfinite(x, 0x7f80); }

double squared_l2_norm(std::span<const float> x) {
  const Kernels k = kernels();
  const int64_t blocks = block_count(x.size());
  if (blocks <= 1) return k.sum_squares(x.data(), x.size());
  std::vector<double> partial(static_cast<size_t>(blocks));
#pragma omp parallel for schedule(static) if (blocks > 4)
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t off = static_cast<size_t>(b) * kBlock;
    partial[static_cast<size_t>(b)] =
        k.sum_squares(x.data() + off, std::min(kBlock, x.size() - off));
  }
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

double global_l2_norm(std::span<const std::span<const float>> xs) {
  double total = 0.0;
  for (const auto& x : xs) total += squared_l2_norm(x);
  return std::sqrt(total);
}

void scale_in_place(std::span<float> x, float factor) {
  const int64_t blocks = block_count(x.size());
#pragma omp parallel for schedule(static) if (blocks > 4)
  for (int64_t b = 0; b < blocks; ++b) {
    float* p = x.data() + static_cast<size_t>(b) * kBlock;
    const size_t n = std::min(kBlock, x.size() - static_cast<size_t>(b) * kBlock);
    for (size_t i = 0; i < n; ++i) p[i] *= factor;
  }
}

double clip_coefficient(double total_norm, double loss_scale, double gradient_clipping) {
  if (gradient_clipping <= 0.0) return 1.0;
  const double clip = (total_norm / loss_scale + 1e-6) / gradient_clipping;
  return clip > 1.0 ? clip : 1.0;
}

namespace {
// 1 / (c * s) in fp32, for combined = c * s.
float factor_of(double combined) {
  return combined == 1.0 ? 1.0f : static_cast<float>(1.0 / combined);
}
}  // namespace

float unscale_and_clip_factor(double total_norm, double loss_scale, double gradient_clipping) {
  return factor_of(clip_coefficient(total_norm, loss_scale, gradient_clipping) * loss_scale);
}

double unscale_and_clip(std::span<const std::span<float>> grads, double total_norm,
                        double loss_scale, double gradient_clipping) {
  const double combined = clip_coefficient(total_norm, loss_scale, gradient_clipping) * loss_scale;
  const float factor = factor_of(combined);
  if (factor != 1.0f)  // multiplying by 1 changes nothing
    for (const auto& g : grads) scale_in_place(g, factor);
  return combined;
}

}  // namespace zerotrain::optim
