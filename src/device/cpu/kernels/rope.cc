// RoPE + grouped-query packing kernels (see rope.h).
#include "device/cpu/kernels/rope.h"

#include <algorithm>

namespace zerotrain::device::cpu {
namespace {

void rotate(float* out, const float* x, const float* c, const float* s, int64_t half) {
  for (int64_t i = 0; i < half; ++i) {
    const float a = x[i], b = x[i + half];
    out[i] = a * c[i] - b * s[i];
    out[i + half] = b * c[i] + a * s[i];
  }
}

// The transpose of rotate: ADDS into out.
void rotate_back_add(float* out, const float* d, const float* c, const float* s, int64_t half) {
  for (int64_t i = 0; i < half; ++i) {
    const float a = d[i], b = d[i + half];
    out[i] += a * c[i] + b * s[i];
    out[i + half] += b * c[i] - a * s[i];
  }
}

}  // namespace

void rope_pack_qkv(float* qkv, const float* q, const float* k, const float* v, const float* cos,
                   const float* sin, int64_t B, int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                   const int32_t* positions) {
  const int64_t C = NH * HD, KC = NKV * HD, rep = NH / NKV, half = HD / 2;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < B * T; ++i) {
    const int64_t t = positions ? positions[i] : i % T;
    const float* c = cos + t * half;
    const float* s = sin + t * half;
    float* o = qkv + i * 3 * C;
    for (int64_t h = 0; h < NH; ++h) rotate(o + h * HD, q + i * C + h * HD, c, s, half);
    for (int64_t j = 0; j < NKV; ++j) {
      const float* kj = k + i * KC + j * HD;
      const float* vj = v + i * KC + j * HD;
      rotate(o + C + j * rep * HD, kj, c, s, half);
      for (int64_t r = 1; r < rep; ++r)
        std::copy_n(o + C + j * rep * HD, HD, o + C + (j * rep + r) * HD);
      for (int64_t r = 0; r < rep; ++r) std::copy_n(vj, HD, o + 2 * C + (j * rep + r) * HD);
    }
  }
}

void rope_unpack_qkv_backward(float* dq, float* dk, float* dv, const float* dqkv, const float* cos,
                              const float* sin, int64_t B, int64_t T, int64_t NH, int64_t NKV,
                              int64_t HD, const int32_t* positions) {
  const int64_t C = NH * HD, KC = NKV * HD, rep = NH / NKV, half = HD / 2;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < B * T; ++i) {
    const int64_t t = positions ? positions[i] : i % T;
    const float* c = cos + t * half;
    const float* s = sin + t * half;
    const float* d = dqkv + i * 3 * C;
    std::fill_n(dq + i * C, C, 0.0f);
    std::fill_n(dk + i * KC, KC, 0.0f);
    std::fill_n(dv + i * KC, KC, 0.0f);
    for (int64_t h = 0; h < NH; ++h) rotate_back_add(dq + i * C + h * HD, d + h * HD, c, s, half);
    for (int64_t j = 0; j < NKV; ++j) {
      float* dkj = dk + i * KC + j * HD;
      float* dvj = dv + i * KC + j * HD;
      for (int64_t r = 0; r < rep; ++r) {
        const float* dvr = d + 2 * C + (j * rep + r) * HD;
        for (int64_t e = 0; e < HD; ++e) dvj[e] += dvr[e];
        rotate_back_add(dkj, d + C + (j * rep + r) * HD, c, s, half);
      }
    }
  }
}

}  // namespace zerotrain::device::cpu
