// ZeRO on the GPU: every stage, at 1 rank and at 2 ranks sharing the one
// GPU (NCCL refuses two ranks on one GPU, so these go through Gloo over
// host-staged buffers), in fp32 and bf16, with optimizer offload, trains on
// the CUDA device and follows the CPU device's losses and weights. And a
// model whose states do not fit a capped device capacity trains with
// offload (checked on the guarded CPU device here, and on the GPU).
// Without a GPU the CUDA cases skip, saying why.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "device/device.h"
#include "zero/zero_job.h"

namespace zerotrain::zero {
namespace {

using testutil::Job;
using testutil::Result;

struct Case {
  int stage, world;
  const char* dtype;
  bool offload;
};

Job job_of(const Case& c) {
  Job j{.world = c.world, .stage = c.stage, .steps = 6};
  if (std::string(c.dtype) == "bf16") j.extra = R"("bf16": {"enabled": true},)";
  j.zero = testutil::kSmallBuckets;
  if (c.stage == 3) j.zero += R"(, "stage3_param_persistence_threshold": 100)";
  if (c.offload) {
    j.zero += R"(, "offload_optimizer": {"device": "cpu", "pin_memory": true})";
    if (c.stage == 3) j.zero += R"(, "offload_param": {"device": "cpu", "pin_memory": true})";
  }
  return j;
}

void skip_without_gpu() {
  std::string why;
  if (device::cuda_device_count(&why) == 0) GTEST_SKIP() << "no GPU here: " << why;
}

double rel_diff(double a, double b) { return std::abs(a - b) / std::max(1e-12, std::abs(b)); }

class CudaZero : public ::testing::TestWithParam<Case> {};

TEST_P(CudaZero, FollowsTheCpuDevice) {
  skip_without_gpu();
  if (IsSkipped()) return;
  const Case c = GetParam();
  Job j = job_of(c);
  const std::vector<Result> cpu = testutil::run(j);
  j.cuda = true;
  const std::vector<Result> gpu = testutil::run(j);
  // fp32: only summation order differs; bf16: the GEMM operands round.
  const double tol = std::string(c.dtype) == "bf16" ? 2e-2 : 1e-4;
  ASSERT_EQ(gpu.size(), cpu.size());
  for (size_t r = 0; r < cpu.size(); ++r) {
    ASSERT_EQ(gpu[r].losses.size(), cpu[r].losses.size());
    for (size_t s = 0; s < cpu[r].losses.size(); ++s)
      EXPECT_LE(rel_diff(gpu[r].losses[s], cpu[r].losses[s]), tol)
          << "rank " << r << " step " << s << ": gpu " << gpu[r].losses[s] << " cpu "
          << cpu[r].losses[s];
    double num = 0, den = 0;
    for (size_t i = 0; i < cpu[r].weights.size(); ++i) {
      num += std::pow(gpu[r].weights[i] - cpu[r].weights[i], 2.0);
      den += std::pow(cpu[r].weights[i], 2.0);
    }
    EXPECT_LE(std::sqrt(num / den), tol) << "weights, rank " << r;
  }
  EXPECT_LT(gpu[0].losses.back(), gpu[0].losses.front());
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int stage = 0; stage <= 3; ++stage)
    for (int world : {1, 2})
      for (const char* dtype : {"fp32", "bf16"}) out.push_back({stage, world, dtype, false});
  out.push_back({2, 2, "bf16", true});
  out.push_back({3, 2, "bf16", true});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Stages, CudaZero, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           const Case& c = i.param;
                           return "stage" + std::to_string(c.stage) + "_n" +
                                  std::to_string(c.world) + "_" + c.dtype +
                                  (c.offload ? "_offload" : "");
                         });

// Capacity: what the offloaded stage-3 run needs on the device (measured on
// this device kind) is too little for the same model without offload,
// which is refused by name; with offload it trains as on the uncapped CPU.
void capped_capacity_trains_with_offload(bool cuda) {
  Job offload = job_of({3, 1, "fp32", true});
  offload.guarded = !cuda;
  offload.cuda = cuda;
  const Result free_run = testutil::run(offload)[0];
  ASSERT_GT(free_run.device_peak, 0);
  Job plain = job_of({3, 1, "fp32", false});
  plain.guarded = !cuda;
  plain.cuda = cuda;
  const Result plain_run = testutil::run(plain)[0];
  const int64_t capacity = free_run.device_peak + free_run.device_peak / 20;
  ASSERT_GT(plain_run.device_peak, capacity)
      << "the test needs a model whose non-offloaded states exceed the offloaded run's peak";

  plain.device_capacity = capacity;
  plain.expect_error = true;
  const Result refused = testutil::run(plain)[0];
  EXPECT_EQ(refused.status.code(), StatusCode::kResourceExhausted) << refused.status.to_string();
  EXPECT_NE(refused.status.message().find("capacity"), std::string::npos)
      << refused.status.message();

  offload.device_capacity = capacity;
  const Result capped = testutil::run(offload)[0];
  Job cpu_job = job_of({3, 1, "fp32", true});
  const Result cpu = testutil::run(cpu_job)[0];
  ASSERT_EQ(capped.losses.size(), cpu.losses.size());
  for (size_t s = 0; s < cpu.losses.size(); ++s)
    EXPECT_LE(rel_diff(capped.losses[s], cpu.losses[s]), cuda ? 1e-4 : 0.0) << "step " << s;
  EXPECT_LE(capped.device_peak, capacity);
}

TEST(CappedCapacity, TrainsWithOffloadOnTheGuardedDevice) {
  capped_capacity_trains_with_offload(false);
}

TEST(CappedCapacity, TrainsWithOffloadOnTheGpu) {
  skip_without_gpu();
  if (IsSkipped()) return;
  capped_capacity_trains_with_offload(true);
}

}  // namespace
}  // namespace zerotrain::zero
