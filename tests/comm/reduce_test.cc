// 16-bit conversions (round to nearest even, specials), reduction kernels,
// partition arithmetic, and comm options from the environment.
#include "comm/gloo/reduce.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "comm/communicator.h"
#include "comm/types.h"

namespace zerotrain::comm {
namespace {

float bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(fp32_to_bf16_bits(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125: ties to even (1.0).
  EXPECT_EQ(fp32_to_bf16_bits(bits(0x3f808000)), 0x3f80);
  // 1.0078125 + half ulp ties to even: up to 1.015625 (0x3f82).
  EXPECT_EQ(fp32_to_bf16_bits(bits(0x3f818000)), 0x3f82);
  EXPECT_EQ(fp32_to_bf16_bits(bits(0x3f808001)), 0x3f81);  // just above halfway
  EXPECT_EQ(fp32_to_bf16_bits(-2.0f), 0xc000);
  EXPECT_TRUE(std::isnan(bf16_bits_to_fp32(fp32_to_bf16_bits(NAN))));
  EXPECT_EQ(fp32_to_bf16_bits(INFINITY), 0x7f80);
  EXPECT_EQ(bf16_bits_to_fp32(0x4040), 3.0f);
}

TEST(Fp16, RoundTripsEveryFiniteHalfExactly) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;  // inf/NaN checked below
    float f = fp16_bits_to_fp32(static_cast<uint16_t>(h));
    ASSERT_EQ(fp32_to_fp16_bits(f), h) << "half 0x" << std::hex << h;
  }
  EXPECT_EQ(fp16_bits_to_fp32(0x3c00), 1.0f);
  EXPECT_EQ(fp16_bits_to_fp32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(fp32_to_fp16_bits(65504.0f), 0x7bff);
  EXPECT_EQ(fp32_to_fp16_bits(65520.0f), 0x7c00);  // halfway to 2^16 rounds to inf
  EXPECT_EQ(fp32_to_fp16_bits(1e-9f), 0x0000);
  EXPECT_EQ(fp32_to_fp16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie -> even
  EXPECT_EQ(fp32_to_fp16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even (up)
  EXPECT_TRUE(std::isnan(fp16_bits_to_fp32(fp32_to_fp16_bits(NAN))));
}

TEST(ReduceCombine, SumAvgMaxMinInFp32AndBf16) {
  float a[3] = {1, -2, 8}, b[3] = {3, 5, NAN}, out[3];
  reduce_combine(out, a, b, 3, DType::kFloat32, ReduceOp::kSum, 1);
  EXPECT_EQ(out[0], 4);
  EXPECT_EQ(out[1], 3);
  reduce_combine(out, a, b, 2, DType::kFloat32, ReduceOp::kAvg, 2);
  EXPECT_EQ(out[0], 2);
  EXPECT_EQ(out[1], 1.5f);
  reduce_combine(out, a, b, 3, DType::kFloat32, ReduceOp::kMax, 1);
  EXPECT_EQ(out[0], 3);
  EXPECT_EQ(out[1], 5);
  EXPECT_TRUE(std::isnan(out[2]));  // NaN (an overflow flag) is never lost
  reduce_combine(out, a, b, 2, DType::kFloat32, ReduceOp::kMin, 1);
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(out[1], -2);
  uint16_t x[2] = {fp32_to_bf16_bits(1.0f), fp32_to_bf16_bits(256.0f)};
  uint16_t y[2] = {fp32_to_bf16_bits(2.0f), fp32_to_bf16_bits(1.0f)};
  reduce_combine(x, x, y, 2, DType::kBFloat16, ReduceOp::kSum, 1);  // in place
  EXPECT_EQ(bf16_bits_to_fp32(x[0]), 3.0f);
  EXPECT_EQ(bf16_bits_to_fp32(x[1]), 256.0f);  // 257 is not a bf16: ties to even 256
}

// The 16-bit combine runs in SIMD blocks of 1024: over 3000 elements (two
// blocks and a tail), every op, in place on either input (as the ring's
// in-place steps do), it gives the element-by-element values exactly —
// widen, combine in fp32, divide, round to nearest even — NaN winning max
// and min.
TEST(ReduceCombine, Bf16AndFp16BlocksEqualTheScalarFormula) {
  const size_t n = 3000;
  for (DType dt : {DType::kBFloat16, DType::kFloat16}) {
    const bool half = dt == DType::kFloat16;
    auto load = [&](uint16_t h) { return half ? fp16_bits_to_fp32(h) : bf16_bits_to_fp32(h); };
    auto store = [&](float f) { return half ? fp32_to_fp16_bits(f) : fp32_to_bf16_bits(f); };
    std::vector<uint16_t> a(n), b(n);
    uint32_t state = 12345;
    for (size_t i = 0; i < n; ++i) {
      state = state * 1664525u + 1013904223u;
      a[i] = store(static_cast<float>(static_cast<int32_t>(state) >> 8) * 1e-4f);
      state = state * 1664525u + 1013904223u;
      b[i] = store(static_cast<float>(static_cast<int32_t>(state) >> 8) * 3e-5f);
    }
    a[7] = store(NAN);
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin})
      for (int divisor : {1, 3}) {
        if (divisor != 1 && op != ReduceOp::kAvg) continue;
        std::vector<uint16_t> out(n), in_place = b;
        reduce_combine(out.data(), a.data(), b.data(), n, dt, op, divisor);
        reduce_combine(in_place.data(), a.data(), in_place.data(), n, dt, op, divisor);
        for (size_t i = 0; i < n; ++i) {
          const float x = load(a[i]), y = load(b[i]);
          float v = x + y;
          if (op == ReduceOp::kMax) v = (std::isnan(x) || x >= y) ? x : y;
          if (op == ReduceOp::kMin) v = (std::isnan(x) || x <= y) ? x : y;
          if (op == ReduceOp::kAvg) v /= static_cast<float>(divisor);
          if (std::isnan(v)) {
            ASSERT_TRUE(std::isnan(load(out[i]))) << i;
          } else {
            ASSERT_EQ(out[i], store(v))
                << (half ? "fp16 " : "bf16 ") << reduce_op_name(op) << " " << i;
          }
          ASSERT_EQ(in_place[i], out[i]) << i;
        }
      }
  }
}

TEST(Partition, RingChunksDifferByAtMostOneElement) {
  size_t total = 0;
  for (int i = 0; i < 4; ++i) {
    RingChunk c = ring_chunk(10, 4, i);
    EXPECT_EQ(c.offset, total);
    EXPECT_EQ(c.count, i < 2 ? 3u : 2u);
    total += c.count;
  }
  EXPECT_EQ(total, 10u);
}

TEST(CommOptionsFromEnv, ReadsLauncherVariables) {
  setenv("RANK", "2", 1);
  setenv("WORLD_SIZE", "4", 1);
  setenv("MASTER_ADDR", "10.0.0.7", 1);
  setenv("MASTER_PORT", "29511", 1);
  setenv("ZEROTRAIN_JOB_SECRET", "abc", 1);
  setenv("ZEROTRAIN_COMM_TIMEOUT", "2.5", 1);
  auto o = comm_options_from_env();
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  EXPECT_EQ(o->rank, 2);
  EXPECT_EQ(o->world_size, 4);
  EXPECT_EQ(o->master_addr, "10.0.0.7");
  EXPECT_EQ(o->master_port, 29511);
  EXPECT_EQ(o->secret, "abc");
  EXPECT_EQ(o->timeout.count(), 2500);
  setenv("RANK", "4", 1);
  EXPECT_NE(comm_options_from_env().status().message().find("rank 4 is outside world size 4"),
            std::string::npos);
  setenv("RANK", "0", 1);
  setenv("ZEROTRAIN_COMM_TIMEOUT", "-1", 1);
  EXPECT_NE(comm_options_from_env().status().message().find("ZEROTRAIN_COMM_TIMEOUT"),
            std::string::npos);
  for (const char* v : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "ZEROTRAIN_JOB_SECRET",
                        "ZEROTRAIN_COMM_TIMEOUT"})
    unsetenv(v);
  auto d = comm_options_from_env();
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->world_size, 1);
  EXPECT_EQ(d->master_port, 29500);
  EXPECT_EQ(d->timeout.count(), 30000);
}

}  // namespace
}  // namespace zerotrain::comm
