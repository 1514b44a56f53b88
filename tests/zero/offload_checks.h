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

#include "zero/partition.h"
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
// for fp32 —, Adam's m and v, the fp32 gradient partition) is on the host;
// the device keeps the model's 4Ψ parameters, in stage 1 its 4Ψ gradient
// buffer, in stage 2 that buffer as staging beside the bucket staging.
inline void expect_offload_bytes(const Result& r, int stage, int n) {
  const int64_t psi = r.numel, own = r.own;
  EXPECT_EQ(r.host_bytes.parameters, 0);
  EXPECT_EQ(r.host_bytes.master_weights, 4 * own);
  EXPECT_EQ(r.host_bytes.optimizer_states, 8 * own);
  EXPECT_EQ(r.host_bytes.gradients, 4 * own);
  EXPECT_EQ(r.host_bytes.buffers, 0);
  EXPECT_EQ(r.bytes.parameters, 4 * psi);
  EXPECT_EQ(r.bytes.master_weights, 0);
  EXPECT_EQ(r.bytes.optimizer_states, 0);
  EXPECT_EQ(r.bytes.gradients, stage == 1 ? 4 * psi : 0);
  EXPECT_EQ(r.bytes.buffers, slot_bytes(r, n) + (stage == 2 ? 4 * psi : 0));
  // DESIGN: offload moves the optimizer's share, 16Ψ/N with our fp32
  // master and gradient partition, to the host (padding aside).
  EXPECT_NEAR(double(r.host_bytes.total()), 16.0 * psi / n, 16.0 * n);
}

}  // namespace zerotrain::zero::testutil
