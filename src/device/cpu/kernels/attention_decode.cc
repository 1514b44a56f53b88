// KV-cached attention for generation (see attention_decode.h).
#include "device/cpu/kernels/attention_decode.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace zerotrain::device::cpu {
namespace {

inline float widen(float x) { return x; }
inline float widen(BFloat16 x) { return to_float(x); }
inline void narrow(float v, float* out) { *out = v; }
inline void narrow(float v, BFloat16* out) { *out = to_bfloat16(v); }
// The probabilities as p·v reads them: bf16 in the bf16 form (autocast's
// att·v, as attention_forward_bf16 rounds them), else as they are.
inline float probability(float p, const float*) { return p; }
inline float probability(float p, const BFloat16*) { return to_float(to_bfloat16(p)); }

// One body for both element types: the arithmetic is fp32 on the widened
// values, in the same order; the bf16 form rounds the probabilities and out.
template <typename T>
void decode(T* out, const T* qkv, T* k_cache, T* v_cache, int64_t B, int64_t n, int64_t pos,
            int64_t Tmax, int64_t NH, int64_t NKV, int64_t HD, int64_t window,
            const int32_t* row_first) {
  const int64_t C = NH * HD, group = NH / NKV;
  // Store the new keys and values (one of each repeated group).
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < n; ++i) {
      const T* row = qkv + (b * n + i) * 3 * C;
      for (int64_t g = 0; g < NKV; ++g) {
        const int64_t at = ((b * NKV + g) * Tmax + pos + i) * HD;
        std::copy_n(row + C + g * group * HD, HD, k_cache + at);
        std::copy_n(row + 2 * C + g * group * HD, HD, v_cache + at);
      }
    }
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(HD));
#pragma omp parallel
  {
    std::vector<float> w(static_cast<size_t>(pos + n)), q(static_cast<size_t>(HD)),
        y(static_cast<size_t>(HD));
#pragma omp for collapse(3) schedule(static)
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < NH; ++h) {
        for (int64_t i = 0; i < n; ++i) {
          const T* qh = qkv + (b * n + i) * 3 * C + h * HD;
          const int64_t g = h / group, last = pos + i;
          const int64_t lo =
              std::max<int64_t>(row_first ? row_first[b] : 0, window > 0 ? last - window + 1 : 0);
          T* o = out + (b * n + i) * C + h * HD;
          std::fill(y.begin(), y.end(), 0.0f);
          if (lo <= last) {  // else a left pad: nothing to attend to, zeros
            for (int64_t d = 0; d < HD; ++d) q[d] = widen(qh[d]);
            const T* k = k_cache + (b * NKV + g) * Tmax * HD;
            const T* v = v_cache + (b * NKV + g) * Tmax * HD;
            float max = -INFINITY;
            for (int64_t t = lo; t <= last; ++t) {
              float dot = 0.0f;
              for (int64_t d = 0; d < HD; ++d) dot += q[d] * widen(k[t * HD + d]);
              w[t] = dot * scale;
              max = std::max(max, w[t]);
            }
            float sum = 0.0f;
            for (int64_t t = lo; t <= last; ++t) {
              w[t] = std::exp(w[t] - max);
              sum += w[t];
            }
            for (int64_t t = lo; t <= last; ++t) {
              const float p = probability(w[t] / sum, v);
              for (int64_t d = 0; d < HD; ++d) y[d] += p * widen(v[t * HD + d]);
            }
          }
          for (int64_t d = 0; d < HD; ++d) narrow(y[d], o + d);
        }
      }
    }
  }
}

}  // namespace

void attention_decode(float* out, const float* qkv, float* k_cache, float* v_cache, int64_t B,
                      int64_t n, int64_t pos, int64_t Tmax, int64_t NH, int64_t NKV, int64_t HD,
                      int64_t window, const int32_t* row_first) {
  decode(out, qkv, k_cache, v_cache, B, n, pos, Tmax, NH, NKV, HD, window, row_first);
}

void attention_decode(BFloat16* out, const BFloat16* qkv, BFloat16* k_cache, BFloat16* v_cache,
                      int64_t B, int64_t n, int64_t pos, int64_t Tmax, int64_t NH, int64_t NKV,
                      int64_t HD, int64_t window, const int32_t* row_first) {
  decode(out, qkv, k_cache, v_cache, B, n, pos, Tmax, NH, NKV, HD, window, row_first);
}

}  // namespace zerotrain::device::cpu
