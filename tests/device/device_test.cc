// The Device contract on the CPU device: usage counted by category and its
// high-water mark, a capacity that refuses an allocation beyond it with a
// message naming what, the use by category and the advice, host memory
// outside the capacity, the byte-count parser, and the tensor copies.
#include "device/device.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "device/cpu/cpu_device.h"
#include "device/ops.h"

namespace zerotrain::device {
namespace {

using cpu::CpuDevice;

TEST(Device, CountsUseByCategoryAndItsPeak) {
  CpuDevice d;
  {
    auto p = d.allocate(1000, MemoryCategory::kParameters, "params");
    auto g = d.allocate(500, MemoryCategory::kGradients, "grads");
    ASSERT_TRUE(p.ok() && g.ok());
    EXPECT_EQ(d.usage().of(MemoryCategory::kParameters), 1000);
    EXPECT_EQ(d.usage().of(MemoryCategory::kGradients), 500);
    EXPECT_EQ(d.usage().total(), 1500);
    std::vector<char> zeros(1000, 0);
    EXPECT_EQ(std::memcmp(p->data(), zeros.data(), 1000), 0) << "zeroed";
  }
  EXPECT_EQ(d.usage().total(), 0);
  EXPECT_EQ(d.usage().peak, 1500);
}

TEST(Device, CapacityRefusesWithWhatWhereAndAdvice) {
  CpuDevice d;
  d.set_capacity(4096);
  d.set_oom_advice([] { return std::string("try stage 3"); });
  auto a = d.allocate(3000, MemoryCategory::kParameters, "model parameters");
  ASSERT_TRUE(a.ok());
  auto b = d.allocate(2000, MemoryCategory::kOptimizerStates, "exp_avg");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  const std::string m = b.status().message();
  for (const char* want :
       {"out of device memory on cpu", "allocating 2.0 KiB", "exp_avg", "(optimizer states)",
        "over the 4.0 KiB", "in use: parameters 2.9 KiB", "try stage 3"})
    EXPECT_NE(m.find(want), std::string::npos) << want << ": " << m;
  EXPECT_EQ(d.usage().total(), 3000) << "a refused allocation takes nothing";
  // Host memory (offload) is not the device's.
  auto h = d.allocate_host(1 << 20, false, MemoryCategory::kOptimizerStates, "offloaded");
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->on_host());
  EXPECT_EQ(d.usage().total(), 3000);
  EXPECT_EQ(h->tensor(DType::kFloat32).device, nullptr);
  a->reset();
  EXPECT_TRUE(d.allocate(4096, MemoryCategory::kBuffers, "all of it").ok());
}

TEST(Device, ParsesByteCounts) {
  EXPECT_EQ(*parse_bytes("512MiB"), 512ll << 20);
  EXPECT_EQ(*parse_bytes("1.5GiB"), 3ll << 29);
  EXPECT_EQ(*parse_bytes("2G"), 2ll << 30);
  EXPECT_EQ(*parse_bytes("300MB"), 300'000'000);
  EXPECT_EQ(*parse_bytes("1048576"), 1 << 20);
  for (const char* bad : {"", "MiB", "12 parsecs", "-1G"})
    EXPECT_EQ(parse_bytes(bad).status().code(), StatusCode::kInvalidArgument) << bad;
}

TEST(Device, CopiesBetweenTensorsAndHostMemory) {
  CpuDevice d;
  auto b = d.allocate(16, MemoryCategory::kBuffers, "b");
  ASSERT_TRUE(b.ok());
  const Tensor t = b->tensor(DType::kFloat32);
  EXPECT_EQ(t.numel, 4u);
  EXPECT_EQ(t.device, &d);
  const std::vector<float> in = {1, 2, 3, 4};
  ASSERT_TRUE(copy_from_host(in.data(), t).ok());
  std::vector<float> out(4);
  ASSERT_TRUE(copy_to_host(t.slice(1, 3), out.data()).ok());
  EXPECT_EQ(out, (std::vector<float>{2, 3, 4, 0}));
  EXPECT_EQ(&ops_for(t), &d.ops());
  EXPECT_EQ(&ops_for(Tensor(std::span<float>(out))), &cpu::host_ops());
  const Status mismatch = copy(t, Tensor(std::span<float>(out).subspan(0, 3)));
  EXPECT_EQ(mismatch.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace zerotrain::device
