// The whole offload / overlap_comm matrix (label slow): stages 1-2 x
// offload on/off x 1, 2, 4 ranks x fp32/bf16, 20 steps each, against stage 0
// on one rank (fp32 within 1e-5 relative per step, bf16 within 2e-3 as
// sharded_test); offload on vs off and overlap on vs off bit-identical,
// with identical bytes on the wire; offload's bytes by category.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "zero/offload_checks.h"

namespace zerotrain::zero {
namespace {

using testutil::describe;
using testutil::expect_equivalent;
using testutil::expect_identical;
using testutil::expect_offload_bytes;
using testutil::Job;
using testutil::kBf16;
using testutil::kOffload;
using testutil::kOverlap;
using testutil::kSmallBuckets;
using testutil::reference;
using testutil::Result;
using testutil::run;
using testutil::slot_bytes;

TEST(ZeroOffloadMatrix, FollowsStage0AndIsBitIdenticalToNoOffloadAt1To4RanksFp32AndBf16) {
  for (bool bf16 : {false, true}) {
    Job base{.steps = 20, .extra = bf16 ? kBf16 : ""};
    const Result ref = reference(base);
    for (int stage : {1, 2})
      for (int n : {1, 2, 4}) {
        Job j = base;
        j.world = n;
        j.stage = stage;
        j.zero = kSmallBuckets;
        const std::vector<Result> plain = run(j);
        j.zero += kOffload;
        const std::vector<Result> off = run(j);
        const std::string what = describe(stage, n, bf16, j.zero);
        // bf16: weight rounding amplifies the fp32 reduction-order noise.
        expect_equivalent(off, ref, bf16 ? 2e-3 : 1e-5, what);
        expect_identical(off, plain, what);
        for (const Result& r : off) expect_offload_bytes(r, stage, n, bf16);
      }
  }
}

TEST(ZeroOffloadMatrix, OverlapIsBitIdenticalToInlineAt4RanksFp32AndBf16) {
  for (bool bf16 : {false, true})
    for (int stage : {1, 2})
      for (const char* offload : {"", kOffload}) {
        Job j{.world = 4, .stage = stage, .steps = 8, .extra = bf16 ? kBf16 : "",
              .zero = kSmallBuckets};
        j.zero += offload;
        const std::vector<Result> inline_run = run(j);
        j.zero += kOverlap;
        expect_identical(run(j), inline_run, describe(stage, 4, bf16, j.zero));
      }
}

}  // namespace
}  // namespace zerotrain::zero
