// Stage-3 jobs for the ZeRO harness (zero_job.h): the stage3_* keys as a
// struct, so a test overrides one without duplicating JSON keys.
//
//   std::vector<Result> got = run(stage3_job(2, {.prefetch = 0}));
//
// Thread-safety: plain values.
#pragma once

#include <string>

#include "zero/zero_job.h"

namespace zerotrain::zero::testutil {

// Small buckets so every group reduces in several columns; by default ln
// and the small biases (< 100 elements) persistent and nothing kept for
// reuse, so each group is gathered for its forward and again for its
// backward.
struct Z3 {
  int64_t prefetch = 20000;
  int64_t persist = 100;
  int64_t reuse = 0;
  std::string more = "";  // further zero_optimization keys, each starting with ','
  std::string json() const {
    return R"(, "reduce_bucket_size": 3000, "stage3_prefetch_bucket_size": )" +
           std::to_string(prefetch) + R"(, "stage3_param_persistence_threshold": )" +
           std::to_string(persist) + R"(, "stage3_max_reuse_distance": )" +
           std::to_string(reuse) + more;
  }
};
inline const std::string kStage3Bf16 = R"("bf16": {"enabled": true},)";
inline const std::string kOffloadBoth =
    R"(, "offload_optimizer": {"device": "cpu", "pin_memory": true},
       "offload_param": {"device": "cpu", "pin_memory": true})";

// 20 steps for curves compared with stage 0; 6 where two stage-3 runs are
// compared with each other bit for bit.
inline Job stage3_job(int n, const Z3& z = {}, int steps = 20) {
  return {.world = n, .stage = 3, .steps = steps, .zero = z.json()};
}
inline constexpr int kShort = 6;

}  // namespace zerotrain::zero::testutil
