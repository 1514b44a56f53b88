// PartitionArray's conversions: write, read and add over 100,003 elements
// (several 32 Ki-element blocks, run on the OpenMP threads, and a tail)
// give the scalar round-to-nearest-even values in bf16 and fp16, exact
// sums in fp32, and the same bits with 1 thread as with 2 — in device
// memory and offloaded to the host, from and to host vectors, on the CPU
// device and on the guarded one (whose memory host code cannot touch, so
// every crossing goes through its copies).
#include "zero/partition_array.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>
#include <vector>

#include "core/half.h"
#include "device/cpu/cpu_device.h"
#include "device/cpu/guarded_device.h"
#include "device/cpu/kernels/reference.h"
#include "zero/dtype_rounding.h"

namespace zerotrain::zero {
namespace {

using testutil::rounded_through;

std::vector<float> write_add_read(device::Device& dev, bool host, DType d,
                                  const std::vector<float>& a, const std::vector<float>& b,
                                  size_t off, int threads) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  auto p = PartitionArray::allocate(dev, d, a.size() + off, {.host = host}, "test");
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->on_host(), host);
  EXPECT_TRUE(p->write(off, a).ok());
  EXPECT_TRUE(p->add(off, b).ok());
  std::vector<float> out(a.size());
  EXPECT_TRUE(p->read(off, std::span<float>(out)).ok());
  omp_set_num_threads(before);
  return out;
}

TEST(PartitionArray, BlockedConversionsEqualTheScalarOnesWithAnyThreadCount) {
  const size_t n = 100003, off = 5;
  const std::vector<float> a = device::cpu::testing::random_floats(n, 41, 4.0f);
  const std::vector<float> b = device::cpu::testing::random_floats(n, 42, 0.01f);
  std::unique_ptr<device::Device> guarded = device::cpu::make_guarded_device();
  for (device::Device* dev : {&device::cpu::cpu_device(), guarded.get()})
    for (bool host : {false, true})
      for (DType d : {DType::kBFloat16, DType::kFloat16, DType::kFloat32}) {
        const std::vector<float> one = write_add_read(*dev, host, d, a, b, off, 1);
        const std::vector<float> two = write_add_read(*dev, host, d, a, b, off, 2);
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(one[i], rounded_through(d, rounded_through(d, a[i]) + b[i]))
              << dev->name() << (host ? " host " : " device ") << dtype_name(d) << " " << i;
          ASSERT_EQ(std::memcmp(&one[i], &two[i], sizeof(float)), 0) << dtype_name(d) << " " << i;
        }
      }
}

}  // namespace
}  // namespace zerotrain::zero
