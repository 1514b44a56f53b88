// Comm staging ("comm staging", src/comm/staging.h) on real Gloo ranks
// (threads over TCP): tensors in a device's memory that the host cannot
// address (a CPU device whose host_address is null, as a GPU's) go
// through host staging and give bitwise the results plain Gloo gives on
// host memory, for every collective, sync and async, fp32 and bf16, 2 and
// 3 ranks, element counts 0, 1 and odd, in and out of place.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <tuple>

#include "comm/gloo/reduce.h"
#include "device/cpu/cpu_device.h"
#include "rank_threads.h"

namespace zerotrain::comm {
namespace {

using testutil::run_ranks;

// CPU memory posing as a GPU's: host_address is null, so Gloo must stage
// it; copies are counted to prove it did.
class UnreachableDevice final : public device::cpu::CpuDevice {
 public:
  std::string name() const override { return "unreachable"; }
  void* host_address(const void*) const override { return nullptr; }
  Status copy(void* dst, const void* src, size_t bytes) override {
    copies.fetch_add(1);
    return CpuDevice::copy(dst, src, bytes);
  }
  std::atomic<int> copies{0};
};

const size_t kCounts[] = {0, 1, 7, 13, 1001};

// Values whose sums round (so bf16 rounding order matters), distinct per
// rank and per call.
std::vector<std::byte> pattern(size_t count, DType dt, int rank, int salt) {
  std::vector<std::byte> v(count * dtype_size(dt));
  for (size_t i = 0; i < count; ++i) {
    const float x = 0.37f * static_cast<float>(rank + 1) + 0.0131f * static_cast<float>(i % 101) -
                    0.29f * static_cast<float>(salt);
    if (dt == DType::kFloat32) {
      std::memcpy(&v[i * 4], &x, 4);
    } else {
      const uint16_t h = fp32_to_bf16_bits(x);
      std::memcpy(&v[i * 2], &h, 2);
    }
  }
  return v;
}

// `bytes` in the device's memory, as a tensor of dtype.
struct DeviceCopy {
  device::Buffer buffer;
  Tensor tensor;
};
DeviceCopy to_device(device::Device& d, const std::vector<std::byte>& bytes, DType dt) {
  auto b = d.allocate(bytes.size(), device::MemoryCategory::kBuffers, "test");
  EXPECT_TRUE(b.ok()) << b.status().to_string();
  Tensor t = b->tensor(dt);
  EXPECT_TRUE(device::copy_from_host(bytes.data(), t).ok());
  return {std::move(*b), t};
}
std::vector<std::byte> to_host(const ConstTensor& t) {
  std::vector<std::byte> v(t.size_bytes());
  EXPECT_TRUE(device::copy_to_host(t, v.data()).ok());
  return v;
}

class StagedCollectives : public ::testing::TestWithParam<std::tuple<int, DType, bool>> {
 protected:
  // The sync form, or the async form waited on.
  static Status finish(bool async, const std::function<WorkPtr()>& submit,
                       const std::function<Status()>& sync) {
    return async ? submit()->wait() : sync();
  }
};

TEST_P(StagedCollectives, AllreduceMatchesGlooOnHostMemoryBitwise) {
  const auto [n, dt, async] = GetParam();
  run_ranks(n, [&, dt = dt, async = async](Communicator& c) {
    UnreachableDevice d;
    for (size_t count : kCounts) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg}) {
        std::vector<std::byte> host = pattern(count, dt, c.rank(), 0);
        DeviceCopy dev = to_device(d, host, dt);
        ASSERT_TRUE(c.allreduce(std::span<std::byte>(host), dt, op).ok());
        const int before = d.copies.load();
        Status st = finish(
            async, [&] { return c.allreduce_async(dev.tensor, op); },
            [&] { return c.allreduce(dev.tensor, op); });
        ASSERT_TRUE(st.ok()) << st.to_string();
        if (count > 0) {
          EXPECT_EQ(d.copies.load() - before, 2) << "staged in and back";
        }
        EXPECT_EQ(to_host(dev.tensor), host) << "count " << count << " " << reduce_op_name(op);
      }
    }
  });
}

TEST_P(StagedCollectives, ReduceScatterMatchesInAndOutOfPlace) {
  const auto [n, dt, async] = GetParam();
  run_ranks(n, [&, n = n, dt = dt, async = async](Communicator& c) {
    UnreachableDevice d;
    const int r = c.rank();
    for (size_t count : kCounts) {
      const size_t es = dtype_size(dt), chunk = count * es;
      const std::vector<std::byte> input = pattern(count * n, dt, r, 1);
      std::vector<std::byte> want(chunk);
      ASSERT_TRUE(c.reduce_scatter(std::span<const std::byte>(input), std::span<std::byte>(want),
                                   dt, ReduceOp::kAvg)
                      .ok());
      DeviceCopy in = to_device(d, input, dt);
      DeviceCopy out = to_device(d, std::vector<std::byte>(chunk), dt);
      Status st = finish(
          async, [&] { return c.reduce_scatter_async(in.tensor, out.tensor, ReduceOp::kAvg); },
          [&] { return c.reduce_scatter(in.tensor, out.tensor, ReduceOp::kAvg); });
      ASSERT_TRUE(st.ok()) << st.to_string();
      EXPECT_EQ(to_host(out.tensor), want) << "count " << count;
      EXPECT_EQ(to_host(in.tensor), input) << "the input is only read";
      // In place: the output is this rank's chunk of the input; the other
      // chunks stay as they were.
      Tensor own = in.tensor.slice(r * count, count);
      st = finish(
          async, [&] { return c.reduce_scatter_async(in.tensor, own, ReduceOp::kAvg); },
          [&] { return c.reduce_scatter(in.tensor, own, ReduceOp::kAvg); });
      ASSERT_TRUE(st.ok()) << st.to_string();
      std::vector<std::byte> expect_all = input;
      if (chunk > 0) std::memcpy(expect_all.data() + r * chunk, want.data(), chunk);
      EXPECT_EQ(to_host(in.tensor), expect_all) << "count " << count;
    }
  });
}

TEST_P(StagedCollectives, AllgatherMatchesInAndOutOfPlace) {
  const auto [n, dt, async] = GetParam();
  run_ranks(n, [&, n = n, dt = dt, async = async](Communicator& c) {
    UnreachableDevice d;
    const int r = c.rank();
    for (size_t count : kCounts) {
      const size_t chunk = count * dtype_size(dt);
      const std::vector<std::byte> mine = pattern(count, dt, r, 2);
      std::vector<std::byte> want(chunk * n);
      ASSERT_TRUE(c.allgather(std::span<const std::byte>(mine), std::span<std::byte>(want)).ok());
      DeviceCopy in = to_device(d, mine, dt);
      DeviceCopy out = to_device(d, std::vector<std::byte>(chunk * n), dt);
      Status st = finish(
          async, [&] { return c.allgather_async(in.tensor, out.tensor); },
          [&] { return c.allgather(in.tensor, out.tensor); });
      ASSERT_TRUE(st.ok()) << st.to_string();
      EXPECT_EQ(to_host(out.tensor), want) << "count " << count;
      // In place: the input is this rank's chunk of the output.
      std::vector<std::byte> seeded(chunk * n);
      if (chunk > 0) std::memcpy(seeded.data() + r * chunk, mine.data(), chunk);
      DeviceCopy all = to_device(d, seeded, dt);
      Tensor own = all.tensor.slice(r * count, count);
      st = finish(
          async, [&] { return c.allgather_async(own, all.tensor); },
          [&] { return c.allgather(own, all.tensor); });
      ASSERT_TRUE(st.ok()) << st.to_string();
      EXPECT_EQ(to_host(all.tensor), want) << "count " << count;
    }
  });
}

TEST_P(StagedCollectives, BroadcastMatchesFromEveryRoot) {
  const auto [n, dt, async] = GetParam();
  run_ranks(n, [&, n = n, dt = dt, async = async](Communicator& c) {
    UnreachableDevice d;
    for (size_t count : kCounts) {
      for (int root = 0; root < n; ++root) {
        std::vector<std::byte> host = pattern(count, dt, c.rank(), 3);
        DeviceCopy dev = to_device(d, host, dt);
        ASSERT_TRUE(c.broadcast(std::span<std::byte>(host), root).ok());
        Status st = finish(
            async, [&] { return c.broadcast_async(dev.tensor, root); },
            [&] { return c.broadcast(dev.tensor, root); });
        ASSERT_TRUE(st.ok()) << st.to_string();
        EXPECT_EQ(to_host(dev.tensor), host) << "count " << count << " root " << root;
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, StagedCollectives,
                         ::testing::Combine(::testing::Values(2, 3),
                                            ::testing::Values(DType::kFloat32, DType::kBFloat16),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return "World" + std::to_string(std::get<0>(info.param)) + "_" +
                                  std::string(dtype_name(std::get<1>(info.param))) +
                                  (std::get<2>(info.param) ? "_Async" : "_Sync");
                         });

TEST(StagedCollectivesCounters, CountTheWireBytesNotTheStagingCopies) {
  run_ranks(2, [](Communicator& c) {
    UnreachableDevice d;
    const size_t count = 13;
    DeviceCopy dev = to_device(d, pattern(count, DType::kFloat32, c.rank(), 0), DType::kFloat32);
    c.reset_counters();
    ASSERT_TRUE(c.allreduce(dev.tensor, ReduceOp::kSum).ok());
    OpCounters k = c.counters().op(OpType::kAllreduce);
    EXPECT_EQ(k.calls, 1u);
    EXPECT_EQ(k.bytes_sent, testutil::allreduce_sent(count, 4, 2, c.rank()));
    EXPECT_EQ(k.bytes_received, testutil::allreduce_received(count, 4, 2, c.rank()));
  });
}

}  // namespace
}  // namespace zerotrain::comm
