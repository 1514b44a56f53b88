// The NCCL backend (src/comm/nccl/) where the build has it: the linked
// library is the header's, a non-CUDA device is refused, and, on a GPU,
// world-size-1 collectives give back their input with the Gloo byte
// formulas (0 bytes at one rank), host memory is staged in, and two ranks
// sharing the GPU run on staged Gloo through the factory. Without a GPU
// the GPU cases skip, saying why.
#include <gtest/gtest.h>

#include "comm/factory.h"
#include "device/cpu/cpu_device.h"
#include "device/device.h"

#ifdef ZEROTRAIN_HAVE_NCCL
#include <nccl.h>
#include <stdlib.h>

#include <cstring>
#include <thread>

#include "comm/nccl/nccl_communicator.h"
#include "comm/store/tcp_store.h"
#include "core/half.h"
#endif

namespace zerotrain::comm {
namespace {

#ifndef ZEROTRAIN_HAVE_NCCL

TEST(Nccl, NotInThisBuild) { GTEST_SKIP() << "this build has no NCCL (CUDA backend off)"; }

#else

bool contains(const Status& st, const std::string& part) {
  return st.message().find(part) != std::string::npos;
}

TEST(Nccl, LinkedLibraryIsTheHeadersMajorMinor) {
  const int linked = nccl_runtime_version();
  EXPECT_EQ(linked / 100, NCCL_VERSION_CODE / 100)
      << "linked " << linked << ", header " << NCCL_VERSION_CODE;
}

TEST(Nccl, RefusesADeviceThatIsNotCuda) {
  device::cpu::CpuDevice cpu;
  auto comm = create_nccl_communicator(CommOptions{}, cpu);
  EXPECT_EQ(comm.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(comm.status(), "cpu is not a CUDA device")) << comm.status().message();
  EXPECT_EQ(rank_gpu_of(cpu).status().code(), StatusCode::kInvalidArgument);
}

// The process's GPU, or a skip saying why there is none.
#define ZT_GPU_OR_SKIP(gpu)                                                              \
  std::string why_none;                                                                  \
  if (device::cuda_device_count(&why_none) == 0) GTEST_SKIP() << "no GPU: " << why_none; \
  auto gpu##_made = device::make_device(device::DeviceType::kCuda, 0);                   \
  ASSERT_TRUE(gpu##_made.ok()) << gpu##_made.status().to_string();                       \
  device::Device& gpu = **gpu##_made

TEST(Nccl, WithoutAGpuTheDeviceIsUnavailableWithTheReason) {
  std::string why_none;
  if (device::cuda_device_count(&why_none) > 0) GTEST_SKIP() << "this machine has a GPU";
  auto made = device::make_device(device::DeviceType::kCuda, 0);
  EXPECT_EQ(made.status().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(made.status().message().empty());
}

// fp32 values 1.5, 2.5, ... on the device.
device::Buffer filled(device::Device& d, size_t count, DType dt) {
  std::vector<std::byte> bytes(count * dtype_size(dt));
  for (size_t i = 0; i < count; ++i) {
    const float x = 1.5f + static_cast<float>(i);
    if (dt == DType::kFloat32) {
      std::memcpy(&bytes[i * 4], &x, 4);
    } else {
      const uint16_t h = fp32_to_bf16_bits(x);
      std::memcpy(&bytes[i * 2], &h, 2);
    }
  }
  auto b = d.allocate(bytes.size(), device::MemoryCategory::kBuffers, "test");
  EXPECT_TRUE(b.ok());
  EXPECT_TRUE(device::copy_from_host(bytes.data(), b->tensor(dt)).ok());
  return std::move(*b);
}
std::vector<std::byte> host_copy(const ConstTensor& t) {
  std::vector<std::byte> v(t.size_bytes());
  EXPECT_TRUE(device::copy_to_host(t, v.data()).ok());
  return v;
}

TEST(Nccl, WorldOneCollectivesGiveBackTheirInput) {
  ZT_GPU_OR_SKIP(gpu);
  auto comm = create_nccl_communicator(CommOptions{}, gpu);
  ASSERT_TRUE(comm.ok()) << comm.status().to_string();
  Communicator& c = **comm;
  for (DType dt : {DType::kFloat32, DType::kBFloat16}) {
    for (size_t count : {size_t{1}, size_t{7}, size_t{1} << 20}) {
      device::Buffer a = filled(gpu, count, dt), out = filled(gpu, count, dt);
      const std::vector<std::byte> want = host_copy(a.tensor(dt));
      ASSERT_TRUE(c.allreduce(a.tensor(dt), ReduceOp::kSum).ok());
      ASSERT_TRUE(c.allreduce_async(a.tensor(dt), ReduceOp::kAvg)->wait().ok());
      EXPECT_EQ(host_copy(a.tensor(dt)), want);
      ASSERT_TRUE(gpu.fill_zero(out.data(), out.bytes()).ok());
      ASSERT_TRUE(c.reduce_scatter(a.tensor(dt), out.tensor(dt), ReduceOp::kSum).ok());
      EXPECT_EQ(host_copy(out.tensor(dt)), want);
      ASSERT_TRUE(gpu.fill_zero(out.data(), out.bytes()).ok());
      ASSERT_TRUE(c.allgather_async(a.tensor(dt), out.tensor(dt))->wait().ok());
      EXPECT_EQ(host_copy(out.tensor(dt)), want);
      ASSERT_TRUE(c.broadcast(a.tensor(dt), 0).ok());
      EXPECT_EQ(host_copy(a.tensor(dt)), want);
    }
  }
  // Host memory is staged into device memory.
  std::vector<float> v = {0.25f, -3.0f};
  ASSERT_TRUE(c.allreduce(std::span<float>(v), ReduceOp::kSum).ok());
  EXPECT_EQ(v, (std::vector<float>{0.25f, -3.0f}));
  ASSERT_TRUE(c.barrier().ok());
  CommCounters k = c.counters();
  EXPECT_EQ(k.total().bytes_sent, 0u);
  EXPECT_EQ(k.op(OpType::kAllreduce).calls, 2u * 2u * 3u + 1u);
  EXPECT_EQ(k.op(OpType::kBarrier).calls, 1u);
}

// Two ranks (threads) sharing this GPU, through the factory, over a TCP store.
void run_two_ranks_on_one_gpu(
    const std::function<void(int, StatusOr<std::unique_ptr<Communicator> >, device::Device&)>&
        body) {
  auto server = TcpStoreServer::start({"127.0.0.1", 0, "s"});
  ASSERT_TRUE(server.ok());
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      auto gpu = device::make_device(device::DeviceType::kCuda, 0);
      ASSERT_TRUE(gpu.ok()) << gpu.status().to_string();
      CommOptions o;
      o.rank = r;
      o.world_size = 2;
      o.master_port = (*server)->port();
      o.secret = "s";
      o.host_store = false;
      o.timeout = std::chrono::seconds(10);
      body(r, create_communicator(o, **gpu), **gpu);
    });
  for (auto& t : threads) t.join();
}

TEST(Nccl, TwoRanksSharingTheGpuRunOnStagedGloo) {
  ZT_GPU_OR_SKIP(probe);
  (void)probe;
  unsetenv("ZEROTRAIN_COMM_BACKEND");
  run_two_ranks_on_one_gpu(
      [](int r, StatusOr<std::unique_ptr<Communicator> > comm, device::Device& gpu) {
        ASSERT_TRUE(comm.ok()) << comm.status().to_string();
        device::Buffer a = filled(gpu, 1001, DType::kFloat32);
        ASSERT_TRUE((*comm)->allreduce(a.tensor(DType::kFloat32), ReduceOp::kSum).ok());
        std::vector<std::byte> got = host_copy(a.tensor(DType::kFloat32));
        float first;
        std::memcpy(&first, got.data(), 4);
        EXPECT_EQ(first, 3.0f) << "rank " << r << ": 1.5 + 1.5";
        EXPECT_TRUE((*comm)->barrier().ok());
      });
}

TEST(Nccl, ForcingNcclOnASharedGpuIsRefused) {
  ZT_GPU_OR_SKIP(probe);
  (void)probe;
  setenv("ZEROTRAIN_COMM_BACKEND", "nccl", 1);
  run_two_ranks_on_one_gpu([](int, StatusOr<std::unique_ptr<Communicator> > comm, device::Device&) {
    EXPECT_EQ(comm.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(contains(comm.status(), "share GPU")) << comm.status().message();
  });
  unsetenv("ZEROTRAIN_COMM_BACKEND");
}

#endif  // ZEROTRAIN_HAVE_NCCL

}  // namespace
}  // namespace zerotrain::comm
