// The peak loops themselves, each compiled for its ISA with a target
// attribute (the rest of the build stays baseline x86-64). Accumulators start
// at different values (init + j) so the compiler cannot merge identical
// chains; all accumulators are independent so only throughput limits them.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "probes/compute_kernels.h"

namespace zerotrain::bench::detail {
namespace {

uint32_t bf16_bits(float x) {  // exact for the small dyadic values used
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u >> 16;
}

uint32_t bf16_pair(float even, float odd) { return (bf16_bits(odd) << 16) | bf16_bits(even); }

// Stores and adds in double (_mm512_reduce_add_ps trips GCC 12's
// -Wuninitialized inside its own header, PR 105593).
__attribute__((target("avx512f"))) double sum_lanes(const __m512* x, int count) {
  alignas(64) float out[16];
  double sum = 0;
  for (int j = 0; j < count; ++j) {
    _mm512_store_ps(out, x[j]);
    for (float v : out) sum += v;
  }
  return sum;
}

}  // namespace

__attribute__((target("avx2,fma"))) double fma_avx2(int64_t iterations, const KernelParams& p) {
  constexpr int kAcc = 12;  // 16 ymm registers: 12 accumulators + mul + add
  const __m256 m = _mm256_set1_ps(p.mul), c = _mm256_set1_ps(p.add);
  __m256 x[kAcc];
  for (int j = 0; j < kAcc; ++j) x[j] = _mm256_set1_ps(p.init + static_cast<float>(j));
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kAcc; ++j) x[j] = _mm256_fmadd_ps(x[j], m, c);
  }
  alignas(32) float out[8];
  double sum = 0;
  for (int j = 0; j < kAcc; ++j) {
    _mm256_store_ps(out, x[j]);
    for (float v : out) sum += v;
  }
  return sum;
}

__attribute__((target("avx512f"))) double fma_avx512(int64_t iterations, const KernelParams& p) {
  constexpr int kAcc = 16;  // of 32 zmm registers; 4-cycle latency x 2 ports needs 8
  const __m512 m = _mm512_set1_ps(p.mul), c = _mm512_set1_ps(p.add);
  __m512 x[kAcc];
  for (int j = 0; j < kAcc; ++j) x[j] = _mm512_set1_ps(p.init + static_cast<float>(j));
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kAcc; ++j) x[j] = _mm512_fmadd_ps(x[j], m, c);
  }
  return sum_lanes(x, kAcc);
}

__attribute__((target("avx512f,avx512bf16"))) double dot_avx512_bf16(int64_t iterations,
                                                                     const KernelParams& p) {
  constexpr int kAcc = 16;
  const __m512bh a = (__m512bh)_mm512_set1_epi32(static_cast<int>(bf16_pair(1.0f, 1.0f)));
  const __m512bh b = (__m512bh)_mm512_set1_epi32(static_cast<int>(bf16_pair(p.b_even, p.b_odd)));
  __m512 x[kAcc];
  for (int j = 0; j < kAcc; ++j) x[j] = _mm512_set1_ps(p.init + static_cast<float>(j));
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kAcc; ++j) x[j] = _mm512_dpbf16_ps(x[j], a, b);
  }
  return sum_lanes(x, kAcc);
}

// Tiles: C0..C3 = tmm0..3 (16 rows x 16 fp32), A0, A1 = tmm4, 5 (16 x 32
// bf16), B0, B1 = tmm6, 7 (16 pair-rows x 16 column pairs, VNNI layout).
// C[2i+j] += A_i * B_j: four independent accumulations per iteration.
__attribute__((target("amx-tile,amx-bf16"))) double dot_amx_bf16(int64_t iterations,
                                                                 const KernelParams& p) {
  struct alignas(64) TileConfig {
    uint8_t palette = 1, start_row = 0, reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
  } config;
  for (int t = 0; t < 8; ++t) config.colsb[t] = 64, config.rows[t] = 16;
  alignas(64) float c[4][16 * 16];
  alignas(64) uint32_t a[16 * 16], b[16 * 16];
  for (int t = 0; t < 4; ++t)
    for (float& v : c[t]) v = p.init + static_cast<float>(t);
  for (uint32_t& v : a) v = bf16_pair(1.0f, 1.0f);
  for (uint32_t& v : b) v = bf16_pair(p.b_even, p.b_odd);
  _tile_loadconfig(&config);
  _tile_loadd(0, c[0], 64);
  _tile_loadd(1, c[1], 64);
  _tile_loadd(2, c[2], 64);
  _tile_loadd(3, c[3], 64);
  _tile_loadd(4, a, 64);
  _tile_loadd(5, a, 64);
  _tile_loadd(6, b, 64);
  _tile_loadd(7, b, 64);
  for (int64_t i = 0; i < iterations; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c[0], 64);
  _tile_stored(1, c[1], 64);
  _tile_stored(2, c[2], 64);
  _tile_stored(3, c[3], 64);
  _tile_release();
  double sum = 0;
  for (auto& tile : c)
    for (float v : tile) sum += v;
  return sum;
}

}  // namespace zerotrain::bench::detail
