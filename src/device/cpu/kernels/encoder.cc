// Token + position embedding kernels (see encoder.h).
#include "device/cpu/kernels/encoder.h"

#include <omp.h>

#include <algorithm>

namespace zerotrain::device::cpu {

Status encoder_forward(float* out, const int32_t* inp, const float* wte, const float* wpe,
                       int64_t B, int64_t T, int64_t C, int64_t V, const int32_t* positions) {
  for (int64_t i = 0; i < B * T; ++i) {
    if (inp[i] < 0 || inp[i] >= V) {
      return invalid_argument(detail::concat("encoder: token id ", inp[i], " at (b=", i / T,
                                             ", t=", i % T, ") is outside [0, V=", V, ")"));
    }
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < B * T; ++i) {
    const float* tok = wte + static_cast<int64_t>(inp[i]) * C;
    float* o = out + i * C;
    if (wpe == nullptr) {
      std::copy_n(tok, C, o);
      continue;
    }
    const float* pos = wpe + (positions ? positions[i] : i % T) * C;
    for (int64_t c = 0; c < C; ++c) o[c] = tok[c] + pos[c];
  }
  return ok_status();
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* inp, int64_t B,
                      int64_t T, int64_t C, const int32_t* positions) {
  // Channel slices make the scatter race-free without atomics: two threads
  // never touch the same column, and each column is summed in (b, t) order.
#pragma omp parallel
  {
    const int64_t nth = omp_get_num_threads(), tid = omp_get_thread_num();
    const int64_t chunk = (C + nth - 1) / nth;
    const int64_t c0 = std::min(C, tid * chunk), c1 = std::min(C, c0 + chunk);
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t t = 0; t < T; ++t) {
        const float* d = dout + (b * T + t) * C;
        float* tok = dwte + static_cast<int64_t>(inp[b * T + t]) * C;
        for (int64_t c = c0; c < c1; ++c) tok[c] += d[c];
        if (dwpe == nullptr) continue;
        float* pos = dwpe + (positions ? positions[b * T + t] : t) * C;
        for (int64_t c = c0; c < c1; ++c) pos[c] += d[c];
      }
    }
  }
}

}  // namespace zerotrain::device::cpu
