// RoPE + grouped-query packing kernels (see rope.h).
#include "device/cpu/kernels/rope.h"

#include <algorithm>
#include <vector>

#include "device/cpu/convert.h"

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

struct Shape {
  int64_t C, KC, rep, half, HD, NH, NKV;
};

Shape shape(int64_t NH, int64_t NKV, int64_t HD) {
  return {NH * HD, NKV * HD, NH / NKV, HD / 2, HD, NH, NKV};
}

// One (b, t) row: o [3C] from q [C], k and v [KC].
void pack_row(float* o, const float* q, const float* k, const float* v, const float* c,
              const float* s, const Shape& d) {
  const int64_t C = d.C, HD = d.HD, rep = d.rep;
  for (int64_t h = 0; h < d.NH; ++h) rotate(o + h * HD, q + h * HD, c, s, d.half);
  for (int64_t j = 0; j < d.NKV; ++j) {
    rotate(o + C + j * rep * HD, k + j * HD, c, s, d.half);
    for (int64_t r = 1; r < rep; ++r)
      std::copy_n(o + C + j * rep * HD, HD, o + C + (j * rep + r) * HD);
    for (int64_t r = 0; r < rep; ++r) std::copy_n(v + j * HD, HD, o + 2 * C + (j * rep + r) * HD);
  }
}

// One row of the transpose: dq [C], dk and dv [KC] overwritten from d [3C].
void unpack_row(float* dq, float* dk, float* dv, const float* d, const float* c, const float* s,
                const Shape& sh) {
  const int64_t C = sh.C, HD = sh.HD, rep = sh.rep;
  std::fill_n(dq, C, 0.0f);
  std::fill_n(dk, sh.KC, 0.0f);
  std::fill_n(dv, sh.KC, 0.0f);
  for (int64_t h = 0; h < sh.NH; ++h) rotate_back_add(dq + h * HD, d + h * HD, c, s, sh.half);
  for (int64_t j = 0; j < sh.NKV; ++j) {
    float* dkj = dk + j * HD;
    float* dvj = dv + j * HD;
    for (int64_t r = 0; r < rep; ++r) {
      const float* dvr = d + 2 * C + (j * rep + r) * HD;
      for (int64_t e = 0; e < HD; ++e) dvj[e] += dvr[e];
      rotate_back_add(dkj, d + C + (j * rep + r) * HD, c, s, sh.half);
    }
  }
}

int64_t table_row(const int32_t* positions, int64_t i, int64_t T) {
  return positions ? positions[i] : i % T;
}

}  // namespace

void rope_pack_qkv(float* qkv, const float* q, const float* k, const float* v, const float* cos,
                   const float* sin, int64_t B, int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                   const int32_t* positions) {
  const Shape d = shape(NH, NKV, HD);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < B * T; ++i) {
    const int64_t t = table_row(positions, i, T);
    pack_row(qkv + i * 3 * d.C, q + i * d.C, k + i * d.KC, v + i * d.KC, cos + t * d.half,
             sin + t * d.half, d);
  }
}

void rope_unpack_qkv_backward(float* dq, float* dk, float* dv, const float* dqkv, const float* cos,
                              const float* sin, int64_t B, int64_t T, int64_t NH, int64_t NKV,
                              int64_t HD, const int32_t* positions) {
  const Shape d = shape(NH, NKV, HD);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < B * T; ++i) {
    const int64_t t = table_row(positions, i, T);
    unpack_row(dq + i * d.C, dk + i * d.KC, dv + i * d.KC, dqkv + i * 3 * d.C, cos + t * d.half,
               sin + t * d.half, d);
  }
}

// The bf16 forms: a row widened (exact), the fp32 row above, rounded once.
void rope_pack_qkv_bf16(BFloat16* qkv, const BFloat16* q, const BFloat16* k, const BFloat16* v,
                        const float* cos, const float* sin, int64_t B, int64_t T, int64_t NH,
                        int64_t NKV, int64_t HD, const int32_t* positions) {
  const Shape d = shape(NH, NKV, HD);
#pragma omp parallel
  {
    std::vector<float> in(static_cast<size_t>(d.C + 2 * d.KC)), out(static_cast<size_t>(3 * d.C));
    float *fq = in.data(), *fk = fq + d.C, *fv = fk + d.KC;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < B * T; ++i) {
      const int64_t t = table_row(positions, i, T);
      float_from_bf16_array(fq, q + i * d.C, d.C);
      float_from_bf16_array(fk, k + i * d.KC, d.KC);
      float_from_bf16_array(fv, v + i * d.KC, d.KC);
      pack_row(out.data(), fq, fk, fv, cos + t * d.half, sin + t * d.half, d);
      bf16_from_float_array(qkv + i * 3 * d.C, out.data(), 3 * d.C);
    }
  }
}

void rope_unpack_qkv_backward_bf16(BFloat16* dq, BFloat16* dk, BFloat16* dv,
                                   const BFloat16* dqkv, const float* cos, const float* sin,
                                   int64_t B, int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                                   const int32_t* positions) {
  const Shape d = shape(NH, NKV, HD);
#pragma omp parallel
  {
    std::vector<float> in(static_cast<size_t>(3 * d.C)), out(static_cast<size_t>(d.C + 2 * d.KC));
    float *fq = out.data(), *fk = fq + d.C, *fv = fk + d.KC;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < B * T; ++i) {
      const int64_t t = table_row(positions, i, T);
      float_from_bf16_array(in.data(), dqkv + i * 3 * d.C, 3 * d.C);
      unpack_row(fq, fk, fv, in.data(), cos + t * d.half, sin + t * d.half, d);
      bf16_from_float_array(dq + i * d.C, fq, d.C);
      bf16_from_float_array(dk + i * d.KC, fk, d.KC);
      bf16_from_float_array(dv + i * d.KC, fv, d.KC);
    }
  }
}

}  // namespace zerotrain::device::cpu
