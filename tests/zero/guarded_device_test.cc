// The device seam, proved on the CPU: every ZeRO stage, with and without
// offload (optimizer; + parameters at stage 3), in fp32, bf16 and fp16, at
// 1 and 2 ranks, trains on the guarded CPU device — whose memory only its
// own calls and Ops can reach, so any dereference of device memory by the
// model, the strategies, the optimizer or the engine crashes the test —
// and gives the same losses and weights, bit for bit, as on the plain CPU
// device (and follows stage 0 on one rank, as the other ZeRO tests check).
#include "device/cpu/guarded_device.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device/cpu/cpu_device.h"
#include "zero/zero_job.h"

namespace zerotrain::zero {
namespace {

using testutil::Job;
using testutil::Result;

TEST(GuardedDevice, HostCodeCannotTouchItsMemoryButItsCallsCan) {
  std::unique_ptr<device::Device> d = device::cpu::make_guarded_device();
  StatusOr<device::Buffer> b = d->allocate(64, device::MemoryCategory::kBuffers, "probe");
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(device::cpu::is_guarded_address(b->data()));
  const std::vector<float> in = {1.5f, -2.0f, 3.25f, 0.0f};
  const Tensor t = b->tensor(DType::kFloat32, 0, in.size());
  ASSERT_TRUE(device::copy_from_host(in.data(), t).ok());
  ASSERT_TRUE(d->ops().scale(t, 2.0f).ok());
  std::vector<float> out(in.size());
  ASSERT_TRUE(device::copy_to_host(t, out.data()).ok());
  EXPECT_EQ(out, (std::vector<float>{3.0f, -4.0f, 6.5f, 0.0f}));
  EXPECT_DEATH(
      {
        volatile float x = *b->as<float>();
        (void)x;
      },
      "");
  // Host memory from the same device stays ordinary memory.
  StatusOr<device::Buffer> h =
      d->allocate_host(64, false, device::MemoryCategory::kBuffers, "host");
  ASSERT_TRUE(h.ok());
  EXPECT_FALSE(device::cpu::is_guarded_address(h->data()));
  h->as<float>()[0] = 1.0f;
}

struct Case {
  int stage, world;
  const char* dtype;  // "fp32", "bf16", "fp16"
  bool offload;
};

std::string describe(const Case& c) {
  return "stage " + std::to_string(c.stage) + " n " + std::to_string(c.world) + " " + c.dtype +
         (c.offload ? " offload" : "");
}

Job job_of(const Case& c, bool guarded) {
  Job j{.world = c.world, .stage = c.stage, .steps = 4, .guarded = guarded};
  const std::string dtype = c.dtype;
  if (dtype == "bf16") j.extra = R"("bf16": {"enabled": true},)";
  if (dtype == "fp16") j.extra = R"("fp16": {"enabled": true, "initial_scale_power": 8},)";
  j.zero = R"(, "reduce_bucket_size": 3000, "allgather_bucket_size": 5000)";
  if (c.stage == 3) j.zero += R"(, "stage3_param_persistence_threshold": 100)";
  if (c.offload) {
    j.zero += R"(, "offload_optimizer": {"device": "cpu", "pin_memory": false})";
    if (c.stage == 3) j.zero += R"(, "offload_param": {"device": "cpu"})";
  }
  return j;
}

class GuardedMatrix : public ::testing::TestWithParam<Case> {};

TEST_P(GuardedMatrix, TrainsBitForBitAsOnTheCpuDevice) {
  const Case c = GetParam();
  const std::vector<Result> plain = testutil::run(job_of(c, false));
  const std::vector<Result> guarded = testutil::run(job_of(c, true));
  ASSERT_EQ(guarded.size(), plain.size());
  for (size_t r = 0; r < plain.size(); ++r) {
    EXPECT_EQ(guarded[r].losses, plain[r].losses) << describe(c) << " rank " << r;
    EXPECT_EQ(guarded[r].weights, plain[r].weights) << describe(c) << " rank " << r;
  }
  EXPECT_LT(guarded[0].losses.back(), guarded[0].losses.front()) << describe(c);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int stage = 0; stage <= 3; ++stage)
    for (int world : {1, 2})
      for (const char* dtype : {"fp32", "bf16", "fp16"})
        for (bool offload : {false, true})
          if (!(stage == 0 && offload)) out.push_back({stage, world, dtype, offload});
  return out;
}

INSTANTIATE_TEST_SUITE_P(StagesOffloadDtypesRanks, GuardedMatrix, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           const Case& c = i.param;
                           return "stage" + std::to_string(c.stage) + "_n" +
                                  std::to_string(c.world) + "_" + c.dtype +
                                  (c.offload ? "_offload" : "");
                         });

}  // namespace
}  // namespace zerotrain::zero
