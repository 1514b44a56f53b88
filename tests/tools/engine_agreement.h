// The engine-vs-estimate check of one configuration (see
// engine_agreement_test.cc): create the engine at `world` ranks (threads
// over Gloo TCP), read memory(), compare with
// `zero::model_state_bytes(..., StorageLayout::kEngine)`.
//
//   run_case({.preset = "gpt2-tiny", .world = 2, .stage = 2, .offload = true});
//
// Thread-safety: run_case spawns the rank threads itself.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <string>

#include "comm/rank_threads.h"
#include "config/config.h"
#include "engine/engine.h"
#include "model/gpt2/gpt_model.h"
#include "model/gpt2/layout.h"
#include "tools/estimate.h"

namespace zerotrain::tools::testutil {

struct Case {
  std::string preset;
  int world = 1;
  int stage = 0;
  bool offload = false;
  bool bf16 = false;
};

inline std::string describe(const Case& c) {
  return c.preset + " stage " + std::to_string(c.stage) + " n " + std::to_string(c.world) +
         (c.offload ? " offload" : "") + (c.bf16 ? " bf16" : " fp32");
}

inline std::string config_json(const Case& c) {
  std::string zero = R"({"stage": )" + std::to_string(c.stage);
  if (c.offload) {
    zero += R"(, "offload_optimizer": {"device": "cpu", "pin_memory": false})";
    if (c.stage == 3) zero += R"(, "offload_param": {"device": "cpu"})";
  }
  return R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": )" + zero + "}" +
         (c.bf16 ? R"(, "bf16": {"enabled": true})" : "") +
         R"(, "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}})";
}

// Model-state bytes as the engine reports them: buffers (staging) and
// activations are not model states, in the engine's report as in estimate.
inline void expect_agrees(comm::Communicator& comm, const Case& c) {
  const std::string what = describe(c);
  StatusOr<model::gpt2::GptConfig> cfg = model::gpt2::preset(c.preset);
  ASSERT_TRUE(cfg.ok());
  StatusOr<model::gpt2::GptModel> m = model::gpt2::GptModel::create(*cfg, {.max_batch = 1});
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  if (comm.rank() == 0) {
    ASSERT_TRUE(m->init_parameters(7).ok());
  }
  config::TrainerArgs args;
  args.world_size = c.world;
  StatusOr<config::Config> conf = config::parse_config(config_json(c), args);
  ASSERT_TRUE(conf.ok()) << what << ": " << conf.status().to_string();
  auto e = engine::Engine::create(*conf, &*m, &comm, {.configure_threads = false});
  ASSERT_TRUE(e.ok()) << what << ": " << e.status().to_string();

  const engine::MemoryReport r = (*e)->memory();
  const int64_t device = r.model_states.total() - r.model_states.buffers;
  const int64_t host = r.host_model_states.total() - r.host_model_states.buffers;
  const zero::ModelStateSetup setup{
      .params = r.numel,
      .world_size = c.world,
      .ranks_per_node = c.world,
      .dtype = c.bf16 ? DType::kBFloat16 : DType::kFloat32,
      .layout = zero::StorageLayout::kEngine,
      .stage3_persistent_numel =
          model_counts(model::gpt2::make_layout(*cfg)).stage3_persistent_numel};
  StatusOr<MemoryEstimate> want = zero::model_state_bytes(setup, c.stage, c.offload);
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  const double states = double(want->device_bytes + want->host_bytes_per_rank);
  EXPECT_LE(std::abs(double(device - want->device_bytes)), 0.05 * states)
      << what << " rank " << comm.rank() << ": device " << device << " vs estimate "
      << want->device_bytes;
  EXPECT_LE(std::abs(double(host - want->host_bytes_per_rank)), 0.05 * states)
      << what << " rank " << comm.rank() << ": host " << host << " vs estimate "
      << want->host_bytes_per_rank;
  if (c.stage < 3 && comm.rank() == 0) {
    // Rank 0's partition is a whole ceil(Ψ/N), as the estimate counts: the
    // formula holds to the byte for stages 0-2 (other ranks may own fewer
    // real elements, the last one the remainder).
    EXPECT_EQ(device, want->device_bytes) << what;
    EXPECT_EQ(host, want->host_bytes_per_rank) << what;
  }
}

inline void run_case(const Case& c) {
  comm::testutil::run_ranks(c.world, [&](comm::Communicator& comm) { expect_agrees(comm, c); });
}

// Every stage 0-3, offload off/on (not at stage 0: refused), fp32 and bf16,
// at 1, 2 and 4 ranks, for one preset.
inline void run_all_cases(const std::string& preset,
                          std::initializer_list<int> worlds = {1, 2, 4}) {
  for (int world : worlds)
    for (int stage = 0; stage <= 3; ++stage)
      for (bool offload : {false, true})
        for (bool bf16 : {false, true}) {
          if (stage == 0 && offload) continue;
          run_case(
              {.preset = preset, .world = world, .stage = stage, .offload = offload, .bf16 = bf16});
        }
}

}  // namespace zerotrain::tools::testutil
