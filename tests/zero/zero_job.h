// Test harness for ZeRO through the Engine: a training job on the micro GPT
// with ranks as threads over real Gloo TCP, its per-step global losses,
// final weights, last-step wire bytes and model-state bytes; and the
// reference (stage 0 on one rank, the same global batch and seed).
//
//   Result ref = reference({});
//   std::vector<Result> got = run({.world = 2, .stage = 2, .zero = kSmallBuckets});
//   expect_equivalent(got, ref, 1e-5, "stage 2 n 2");
//
// Thread-safety: run() spawns one thread per rank; each writes its own Result.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/rank_threads.h"
#include "core/range.h"
#include "device/cpu/guarded_device.h"
#include "device/device.h"
#include "engine/engine.h"
#include "engine/engine_test_util.h"
#include "zero/sharded_strategy.h"
#include "zero/stage3_strategy.h"

namespace zerotrain::zero::testutil {

using engine::testutil::copy;
using engine::testutil::make_model;
using engine::testutil::parse;
using engine::testutil::tokens;

inline constexpr int64_t kSeq = 16;
inline const char* const kSmallBuckets =
    R"(, "reduce_bucket_size": 3000, "allgather_bucket_size": 5000)";

struct Job {
  int world = 1;
  int stage = 0;
  int gas = 1;
  int64_t rows = 8;  // global batch
  int steps = 12;
  std::string extra = "";  // more top-level keys, each ending in ','
  std::string zero = "";   // more zero_optimization keys, each starting with ','
  // Each rank on its own guarded CPU device (device/cpu/guarded_device.h):
  // any dereference of device memory outside the device's calls crashes.
  bool guarded = false;
  // Each rank on its own CUDA device (the tests skip without a GPU); with
  // a capacity in bytes when device_capacity > 0.
  bool cuda = false;
  int64_t device_capacity = 0;
  bool expect_error = false;  // an Engine::create error goes into Result::status
  // LoRA r=4 on every Linear: the strategies train the adapters; every rank
  // loads the same frozen base (init_parameters, seed 7) before the engine.
  bool lora = false;
};

struct Result {
  std::vector<double> losses;    // global mean loss per step
  std::vector<float> weights;    // after the last step
  comm::CommCounters last_step;  // this rank's bytes during the last step
  ModelStateBytes bytes;         // engine memory().model_states
  ModelStateBytes host_bytes;    // engine memory().host_model_states
  int64_t numel = 0, own = 0, hook_flushes = 0;
  int64_t forward_gathers = 0;  // stages 1-2: all-gather columns completed under a forward
  int64_t reduce_columns = 0, in_place_reduces = 0, staging_bytes = 0;  // stages 1-2
  CoordinatorStats stage3;  // stage 3: gathers, prefetches, live high-water mark
  int64_t device_peak = 0;  // the rank's own device (guarded or cuda): peak bytes in use
  int64_t frozen_bytes = 0, host_frozen_bytes = 0;  // engine memory(): LoRA's frozen base
  Status status;  // an engine error (instead of a test failure) when expect_error
};

inline std::string config_json(const Job& j) {
  return R"({"train_batch_size": )" + std::to_string(j.rows) +
         R"(, "gradient_accumulation_steps": )" + std::to_string(j.gas) + ", " + j.extra +
         R"( "gradient_clipping": 1.0, "zero_optimization": {"stage": )" + std::to_string(j.stage) +
         j.zero + R"(},
    "optimizer": {"type": "AdamW", "params": {"lr": 0.003, "weight_decay": 0.01}},
    "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 3,
        "warmup_type": "linear"}}})";
}

inline void train_rank(comm::Communicator& c, const Job& j, Result* out) {
  const int n = c.world_size(), rank = c.rank();
  const int64_t mb = j.rows / (n * j.gas);
  std::unique_ptr<device::Device> own;
  if (j.guarded) own = device::cpu::make_guarded_device();
  if (j.cuda) {
    auto d = device::make_device(device::DeviceType::kCuda, 0);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    own = std::move(*d);
  }
  if (own && j.device_capacity > 0) own->set_capacity(j.device_capacity);
  // Rank 0's weights win (the strategies broadcast them); a frozen base is
  // every rank's own, so every rank loads the same.
  auto lora = j.lora ? std::make_shared<const model::LoraConfig>(
                           model::LoraConfig{.r = 4, .alpha = 8, .all_linear = true})
                     : nullptr;
  model::gpt2::GptModel m = make_model(mb, rank == 0 || j.lora ? 7 : 99, own.get(), lora);
  auto e = engine::Engine::create(parse(config_json(j), n), &m, &c);
  if (!e.ok() && j.expect_error) {
    out->status = e.status();
    return;
  }
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  for (int s = 0; s < j.steps; ++s) {
    const auto x = tokens(j.rows * kSeq, 100 + s), y = tokens(j.rows * kSeq, 200 + s);
    if (s == j.steps - 1) {  // one step's traffic: from and to a settled state
      ASSERT_TRUE((*e)->strategy().wait_communication().ok());
      c.reset_counters();
    }
    double local = 0;
    for (int k = 0; k < j.gas; ++k) {
      const int64_t row = (rank * j.gas + k) * mb;
      auto loss = (*e)->forward(x.data() + row * kSeq, y.data() + row * kSeq, mb, kSeq);
      ASSERT_TRUE(loss.ok()) << loss.status().to_string();
      local += *loss / j.gas;
      ASSERT_TRUE((*e)->backward().ok());
      Status st = (*e)->step();
      ASSERT_TRUE(st.ok()) << st.to_string();
    }
    if (s == j.steps - 1) {
      ASSERT_TRUE((*e)->strategy().wait_communication().ok());
      out->last_step = c.counters();
    }
    float global = static_cast<float>(local);
    ASSERT_TRUE(c.allreduce(std::span<float>(&global, 1), comm::ReduceOp::kAvg).ok());
    out->losses.push_back(global);
  }
  // Stage 3 and 16-bit stages 0-2 free the model's buffers: ask the strategy.
  out->weights.resize(static_cast<size_t>(m.layout().total_numel()));
  ASSERT_TRUE((*e)->strategy().gather_full_parameters(out->weights).ok());
  if (auto* z3 = dynamic_cast<Stage3Strategy*>(&(*e)->strategy())) {
    out->own = z3->layout().owned_numel();
    out->stage3 = z3->coordinator().stats();
  }
  if (own) out->device_peak = own->usage().peak;
  out->bytes = (*e)->memory().model_states;
  out->host_bytes = (*e)->memory().host_model_states;
  out->frozen_bytes = (*e)->memory().frozen_bytes;
  out->host_frozen_bytes = (*e)->memory().host_frozen_bytes;
  out->numel = m.layout().total_numel();
  if (auto* z = dynamic_cast<ShardedStrategy*>(&(*e)->strategy())) {
    out->own = z->owned_count();
    out->hook_flushes = z->hook_flushed_columns();
    out->forward_gathers = z->forward_gathered_columns();
    out->reduce_columns = static_cast<int64_t>(z->reduce_column_count());
    out->in_place_reduces = z->in_place_reduce_columns();
    out->staging_bytes = z->staging_bytes();
  }
}

inline std::vector<Result> run(const Job& j) {
  std::vector<Result> out(j.world);
  comm::testutil::run_ranks(j.world,
                            [&](comm::Communicator& c) { train_rank(c, j, &out[c.rank()]); });
  return out;
}

// Stage 0 on one rank, gas 1, the whole global batch: the reference.
inline Result reference(Job j) {
  j.world = 1;
  j.stage = 0;
  j.gas = 1;
  j.zero.clear();
  return run(j)[0];
}

inline void expect_equivalent(const std::vector<Result>& got, const Result& ref, double rel,
                              const std::string& what) {
  ASSERT_EQ(got[0].losses.size(), ref.losses.size());
  for (size_t s = 0; s < ref.losses.size(); ++s)
    EXPECT_NEAR(got[0].losses[s], ref.losses[s], rel * ref.losses[s]) << what << " step " << s;
  for (size_t r = 1; r < got.size(); ++r)
    EXPECT_EQ(got[r].weights, got[0].weights) << what << ": rank " << r << " differs";
  EXPECT_LT(engine::testutil::relative_l2(got[0].weights, ref.weights), rel) << what;
  EXPECT_LT(ref.losses.back(), ref.losses.front());
}

}  // namespace zerotrain::zero::testutil
