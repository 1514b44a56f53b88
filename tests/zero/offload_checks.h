// Checks shared by the offload / overlap_comm tests: bit-identity of two
// runs (losses, weights, bytes per op) and the offload byte categories.
//
//   expect_identical(run(with_offload), run(without), "stage 2 n 2");
//
// Thread-safety: call from the test thread after run() returned.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/range.h"
#include "zero/zero_job.h"

namespace zerotrain::zero::testutil {

inline const char* const kOffload = R"(, "offload_optimizer": {"device": "cpu", "pin_memory": true})";
inline const char* const kOverlap = R"(, "overlap_comm": true)";
inline const char* const kBf16 = R"("bf16": {"enabled": true},)";

inline std::string describe(int stage, int n, bool bf16, const std::string& zero) {
  return "stage " + std::to_string(stage) + " n " + std::to_string(n) + (bf16 ? " bf16" : " fp32") +
         zero;
}

// Same losses, same weights on every rank, same bytes per op: the exact
// same computation, wherever the buffers live and whenever the wire runs.
inline void expect_identical(const std::vector<Result>& a, const std::vector<Result>& b,
                      const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t r = 0; r < a.size(); ++r) {
    EXPECT_EQ(a[r].losses, b[r].losses) << what << " rank " << r;
    EXPECT_EQ(a[r].weights, b[r].weights) << what << " rank " << r;
    for (int op = 0; op < comm::kNumOpTypes; ++op) {
      const auto t = static_cast<comm::OpType>(op);
      EXPECT_EQ(a[r].last_step.op(t).bytes_sent, b[r].last_step.op(t).bytes_sent)
          << what << " rank " << r << " op " << op;
      EXPECT_EQ(a[r].last_step.op(t).bytes_received, b[r].last_step.op(t).bytes_received)
          << what << " rank " << r << " op " << op;
    }
  }
}

// One staging slot is a column bucket of the larger of the two bucket
// sizes (5000 elements in kSmallBuckets): N·S floats.
inline int64_t slot_bytes(const Result& r, int n) {
  return n == 1 ? 0 : 4 * n * bucket_shard(5000, n, shard_size(r.numel, n));
}

// offload_optimizer: the optimizer's partition (fp32 master — a copy even
// for fp32 —, Adam's m and v, its gradient partition: fp32 at stage 1,
// the accumulator — 16-bit for bf16 — at stage 2) is on the host; the
// device keeps the compute copy (4Ψ, or 2Ψ for bf16), in stage 1 the full
// gradients (the same size), in stage 2 the fp32 [Ψ] backward buffer as
// staging beside the bucket staging (and for bf16 the expansion pool).
inline void expect_offload_bytes(const Result& r, int stage, int n, bool bf16 = false) {
  const int64_t psi = r.numel, own = r.own;
  const int64_t e = bf16 ? 2 : 4;
  const int64_t host_grad = stage == 1 ? 4 : e;
  EXPECT_EQ(r.host_bytes.parameters, 0);
  EXPECT_EQ(r.host_bytes.master_weights, 4 * own);
  EXPECT_EQ(r.host_bytes.optimizer_states, 8 * own);
  EXPECT_EQ(r.host_bytes.gradients, host_grad * own);
  EXPECT_EQ(r.host_bytes.buffers, 0);
  EXPECT_EQ(r.bytes.parameters, e * psi);
  EXPECT_EQ(r.bytes.master_weights, 0);
  EXPECT_EQ(r.bytes.optimizer_states, 0);
  EXPECT_EQ(r.bytes.gradients, stage == 1 ? e * psi : 0);
  const int64_t fixed = slot_bytes(r, n) + (stage == 2 ? 4 * psi : 0);
  if (bf16) {
    EXPECT_GT(r.bytes.buffers, fixed);
    EXPECT_LT(r.bytes.buffers, fixed + 8 * psi);
  } else {
    EXPECT_EQ(r.bytes.buffers, fixed);
  }
  // The ZeRO-Offload split: offload moves the optimizer's share, 12Ψ/N plus our gradient
  // partition, to the host (padding aside).
  EXPECT_NEAR(double(r.host_bytes.total()), double(12 + host_grad) * psi / n,
              double(12 + host_grad) * n);
}

}  // namespace zerotrain::zero::testutil
