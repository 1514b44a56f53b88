// ZeRO stages 1-2 with offload_optimizer and overlap_comm at 2 ranks (the
// 1/2/4-rank x fp32/bf16 matrix is offload_matrix_test, label slow),
// through the Engine with ranks as threads over real Gloo TCP: offload
// follows stage 0 on one rank and is bit-identical to no offload, its bytes
// move to the host category by category; overlap_comm is bit-identical to
// inline with the same bytes on the wire.
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

TEST(ZeroOffload, FollowsStage0AndIsBitIdenticalToNoOffload) {
  const Result ref = reference({});
  for (int stage : {1, 2}) {
    Job j{.world = 2, .stage = stage, .zero = kSmallBuckets};
    const std::vector<Result> plain = run(j);
    j.zero += kOffload;
    const std::vector<Result> off = run(j);
    const std::string what = describe(stage, 2, false, j.zero);
    expect_equivalent(off, ref, 1e-5, what);
    expect_identical(off, plain, what);
    for (const Result& r : off) expect_offload_bytes(r, stage, 2);
    for (const Result& r : plain) EXPECT_EQ(r.host_bytes.total(), 0) << what;
  }
}

TEST(ZeroOffload, WithGradientAccumulationAndAllreduceInsteadOfReduceScatter) {
  const Result ref = reference({.steps = 6});
  for (const std::string& zero :
       {std::string(kSmallBuckets) + kOffload, std::string(R"(, "reduce_scatter": false)") + kOffload})
    for (int stage : {1, 2}) {
      std::vector<Result> got = run({.world = 2, .stage = stage, .gas = 2, .steps = 6, .zero = zero});
      expect_equivalent(got, ref, 1e-5, describe(stage, 2, false, zero) + " gas 2");
    }
}

TEST(ZeroOverlap, BitIdenticalToInlineWithTheSameWireBytes) {
  for (int stage : {1, 2})
    for (const char* offload : {"", kOffload}) {
      Job j{.world = 2, .stage = stage, .gas = 2, .steps = 6, .zero = kSmallBuckets};
      j.zero += offload;
      const std::vector<Result> inline_run = run(j);
      j.zero += kOverlap;
      const std::vector<Result> overlapped = run(j);
      const std::string what = describe(stage, 2, false, j.zero) + " gas 2";
      expect_identical(overlapped, inline_run, what);
      for (size_t r = 0; r < overlapped.size(); ++r) {
        // Double-buffered staging: one more slot than inline.
        EXPECT_EQ(overlapped[r].bytes.buffers - inline_run[r].bytes.buffers,
                  slot_bytes(overlapped[r], 2))
            << what;
        // Stage 2 every micro-step, stage 1 on the boundary's.
        EXPECT_GT(overlapped[r].hook_flushes, 0) << what << ": launched from the hooks";
        // The parameter all-gather ran on into the next forward (5 steps
        // have a next one; 5000-element columns: several per step).
        EXPECT_GE(overlapped[r].forward_gathers, 5) << what;
        EXPECT_EQ(inline_run[r].forward_gathers, 0) << what;
      }
    }
}

TEST(ZeroOverlap, Bf16FollowsStage0Bf16) {
  Job base{.steps = 10, .extra = kBf16};
  const Result ref = reference(base);
  for (int stage : {1, 2}) {
    Job j = base;
    j.world = 2;
    j.stage = stage;
    j.zero = std::string(kSmallBuckets) + kOverlap + kOffload;
    expect_equivalent(run(j), ref, 2e-3, describe(stage, 2, true, j.zero));
  }
}

}  // namespace
}  // namespace zerotrain::zero
