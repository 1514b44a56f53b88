// Counter-based normal draws (see init_normal.h).
#include "model/init_normal.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace zerotrain::model {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

double init_normal(uint64_t seed, uint64_t name_hash, uint64_t index) {
  // splitmix64 stream keyed by (seed, tensor), read at counters 2i, 2i+1.
  const uint64_t key = mix64(seed ^ mix64(name_hash));
  const uint64_t a = mix64(key + (2 * index + 1) * kGolden);
  const uint64_t b = mix64(key + (2 * index + 2) * kGolden);
  const double u1 = static_cast<double>((a >> 11) + 1) * 0x1.0p-53;  // (0, 1]
  const double u2 = static_cast<double>(b >> 11) * 0x1.0p-53;        // [0, 1)
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

void init_flat_range(const ParamLayout& layout, uint64_t seed, int64_t begin, int64_t end,
                     float* out, const std::function<double(const TensorInfo&)>& std_of) {
  ZT_CHECK(0 <= begin && begin <= end && end <= layout.total_numel(), "init range [", begin, ", ",
           end, ") outside [0, ", layout.total_numel(), ")");
  std::memset(out, 0, static_cast<size_t>(end - begin) * sizeof(float));
  for (const TensorInfo& t : layout.tensors()) {
    const int64_t lo = std::max(begin, t.offset), hi = std::min(end, t.offset + t.numel);
    if (lo >= hi) continue;
    float* dst = out + (lo - begin);
    const int64_t first = lo - t.offset, count = hi - lo;
    if (t.kind == ParamKind::kLayerNormWeight) {
      std::fill(dst, dst + count, 1.0f);
      continue;
    }
    const double std = std_of(t);
    if (std == 0.0) continue;
    // Rows past HF's (a padded vocabulary) stay zero: never indexed, zero grad.
    const int64_t live = t.hf_transposed ? t.numel : hf_numel(t);
    const uint64_t name_hash = fnv1a(t.name);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < count; ++i) {
      const int64_t idx = first + i;
      if (idx < live) dst[i] = static_cast<float>(std * init_normal(seed, name_hash, idx));
    }
  }
}

}  // namespace zerotrain::model
