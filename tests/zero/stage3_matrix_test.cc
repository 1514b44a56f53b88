// The stage-3 matrix (label slow): offload off/on x 1, 2, 4 ranks x fp32 /
// bf16, 20 steps each, against stage 0 on one rank (fp32 within 1e-5
// relative per step, bf16 within 2e-3: see stage3_test.cc for the bf16
// bound); offload on vs off and overlap_comm on vs off bit-identical with
// identical bytes on the wire; gradient accumulation 2 at 4 ranks; fp16
// with its dynamic loss scale.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "zero/offload_checks.h"
#include "zero/stage3_job.h"

namespace zerotrain::zero {
namespace {

using testutil::describe;
using testutil::expect_equivalent;
using testutil::expect_identical;
using testutil::Job;
using testutil::kOffloadBoth;
using testutil::reference;
using testutil::Result;
using testutil::run;
using testutil::stage3_job;
using testutil::Z3;

TEST(Stage3Matrix, FollowsStage0AndOffloadIsBitIdenticalAt1To4RanksFp32AndBf16) {
  for (bool bf16 : {false, true}) {
    const std::string extra = bf16 ? testutil::kStage3Bf16 : "";
    const Result ref = reference({.steps = 20, .extra = extra});
    for (int n : {1, 2, 4}) {
      Job j = stage3_job(n);
      j.extra = extra;
      const std::vector<Result> plain = run(j);
      j.zero = Z3{.more = kOffloadBoth}.json();
      const std::vector<Result> off = run(j);
      const std::string what = describe(3, n, bf16, j.zero);
      expect_equivalent(off, ref, bf16 ? 2e-3 : 1e-5, what);
      expect_identical(off, plain, what);
      for (const Result& r : off) {
        EXPECT_GT(r.host_bytes.optimizer_states, 0) << what;
        EXPECT_EQ(r.bytes.optimizer_states + r.bytes.master_weights + r.bytes.gradients, 0) << what;
      }
    }
  }
}

TEST(Stage3Matrix, GradientAccumulationAndOverlapAt4Ranks) {
  const Result ref = reference({.steps = 20});
  for (const std::string& offload : {std::string(), kOffloadBoth}) {
    Job j = stage3_job(4, {.more = offload});
    j.gas = 2;
    const std::vector<Result> inline_run = run(j);
    expect_equivalent(inline_run, ref, 1e-5, "gas 2 n 4" + offload);
    j.zero = Z3{.more = offload + R"(, "overlap_comm": true)"}.json();
    expect_identical(run(j), inline_run, "overlap gas 2 n 4" + offload);
  }
}

// fp16: the 16-bit partitions are fp16; the dynamic loss scale's overflow
// steps come out the same as stage 0's (the gradient partition is rounded
// through fp16, as the engine rounds stage 0's gradients).
TEST(Stage3Matrix, Fp16FollowsStage0Fp16) {
  const std::string fp16 = R"("fp16": {"enabled": true, "initial_scale_power": 12},)";
  const Result ref = reference({.steps = 20, .extra = fp16});
  for (int n : {2, 4}) {
    Job j = stage3_job(n);
    j.extra = fp16;
    expect_equivalent(run(j), ref, 2e-3, describe(3, n, false, " fp16"));
  }
}

}  // namespace
}  // namespace zerotrain::zero
