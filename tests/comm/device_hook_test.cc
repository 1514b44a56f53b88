// The other direction of comm staging (src/comm/staging.h): a backend whose
// hooks take a device's memory (NCCL) gets that device's tensors as they
// are and host memory staged into device memory. Checked on the CPU with a
// world-size-1 backend over the guarded device, whose addresses fault when
// host code touches them: every hook asserts it was handed guarded memory.
#include <gtest/gtest.h>

#include <cstring>

#include "comm/communicator.h"
#include "device/cpu/cpu_device.h"
#include "device/cpu/guarded_device.h"

namespace zerotrain::comm {
namespace {

// World size 1 on device memory: what NCCL does at one rank, through the
// device's own copies (never a host dereference).
class DeviceLoopback final : public Communicator {
 public:
  explicit DeviceLoopback(device::Device& d)
      : Communicator(0, 1, std::chrono::seconds(5)), device_(d) {}
  ~DeviceLoopback() override { shutdown(); }
  int hooks_on_host = 0;  // hooks handed anything but device memory

 protected:
  device::Device* hook_device() const override { return &device_; }
  Status do_allreduce(std::span<std::byte> data, DType, ReduceOp) override {
    check(data.data(), data.size());
    return ok_status();
  }
  Status do_reduce_scatter(std::span<const std::byte> in, std::span<std::byte> out, DType,
                           ReduceOp) override {
    check(in.data(), in.size());
    check(out.data(), out.size());
    return in.data() == out.data() ? ok_status() : device_.copy(out.data(), in.data(), in.size());
  }
  Status do_allgather(std::span<const std::byte> in, std::span<std::byte> out) override {
    check(in.data(), in.size());
    check(out.data(), out.size());
    return in.data() == out.data() ? ok_status() : device_.copy(out.data(), in.data(), in.size());
  }
  Status do_broadcast(std::span<std::byte> data, int) override {
    check(data.data(), data.size());
    return ok_status();
  }
  Status do_barrier() override { return ok_status(); }

 private:
  void check(const void* p, size_t bytes) {
    if (bytes > 0 && !device::cpu::is_guarded_address(p)) ++hooks_on_host;
  }
  device::Device& device_;
};

// CPU memory the host cannot address: neither direct nor stageable here.
class ForeignDevice final : public device::cpu::CpuDevice {
 public:
  std::string name() const override { return "unreachable"; }
  void* host_address(const void*) const override { return nullptr; }
};

TEST(DeviceHookStaging, HostSpansAreStagedIntoDeviceMemoryAndBack) {
  std::unique_ptr<device::Device> gpu = device::cpu::make_guarded_device();
  DeviceLoopback c(*gpu);
  std::vector<float> v = {1.5f, -2.0f, 3.25f};
  ASSERT_TRUE(c.allreduce(std::span<float>(v), ReduceOp::kSum).ok());
  EXPECT_EQ(v, (std::vector<float>{1.5f, -2.0f, 3.25f}));
  std::vector<float> out(3);
  ASSERT_TRUE(c.allgather(std::span<const float>(v), std::span<float>(out)).ok());
  EXPECT_EQ(out, v);
  std::vector<std::byte> text = {std::byte{7}, std::byte{9}, std::byte{11}};  // odd length
  ASSERT_TRUE(c.broadcast(std::span<std::byte>(text), 0).ok());
  EXPECT_EQ(text, (std::vector<std::byte>{std::byte{7}, std::byte{9}, std::byte{11}}));
  EXPECT_EQ(c.hooks_on_host, 0);
  EXPECT_EQ(gpu->usage().of(device::MemoryCategory::kBuffers), 0) << "staging freed after the op";
}

TEST(DeviceHookStaging, DeviceTensorsPassAsTheyAreAndMixWithHostTensors) {
  std::unique_ptr<device::Device> gpu = device::cpu::make_guarded_device();
  DeviceLoopback c(*gpu);
  auto buf = gpu->allocate(4 * sizeof(float), device::MemoryCategory::kGradients, "grads");
  ASSERT_TRUE(buf.ok());
  Tensor dev = buf->tensor(DType::kFloat32);
  std::vector<float> host_in = {4.0f, 5.0f, 6.0f, 7.0f};
  ASSERT_TRUE(device::copy_from_host(host_in.data(), dev).ok());
  ASSERT_TRUE(c.allreduce(dev, ReduceOp::kAvg).ok());
  // Host input, device output, and the reverse.
  std::vector<float> host = {1.0f, 2.0f, 3.0f, 4.0f};
  ASSERT_TRUE(c.allgather(ConstTensor(host), dev).ok());
  std::vector<float> back(4);
  ASSERT_TRUE(c.reduce_scatter(ConstTensor(dev), Tensor(back), ReduceOp::kSum).ok());
  EXPECT_EQ(back, host);
  // In place on the device: no staging, the hook sees in == out.
  ASSERT_TRUE(c.reduce_scatter(ConstTensor(dev), dev, ReduceOp::kSum).ok());
  EXPECT_EQ(c.hooks_on_host, 0);
}

TEST(DeviceHookStaging, HostAddressableDeviceMemoryIsStagedIn) {
  std::unique_ptr<device::Device> gpu = device::cpu::make_guarded_device();
  DeviceLoopback c(*gpu);
  device::cpu::CpuDevice cpu;
  auto buf = cpu.allocate(2 * sizeof(float), device::MemoryCategory::kBuffers, "cpu side");
  ASSERT_TRUE(buf.ok());
  Tensor t = buf->tensor(DType::kFloat32);
  t.as<float>()[0] = 8.0f;
  t.as<float>()[1] = -1.0f;
  ASSERT_TRUE(c.allreduce(t, ReduceOp::kSum).ok());
  EXPECT_EQ(t.as<float>()[0], 8.0f);
  EXPECT_EQ(c.hooks_on_host, 0);
}

TEST(DeviceHookStaging, AnotherDevicesUnaddressableMemoryIsRefused) {
  std::unique_ptr<device::Device> gpu = device::cpu::make_guarded_device();
  DeviceLoopback c(*gpu);
  ForeignDevice other;
  auto buf = other.allocate(16, device::MemoryCategory::kBuffers, "elsewhere");
  ASSERT_TRUE(buf.ok());
  Status st = c.allreduce(buf->tensor(DType::kFloat32), ReduceOp::kSum);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("allreduce: the tensor is in unreachable memory"), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace zerotrain::comm
