// zerotrain estimate against the engine's measured model-state bytes: the
// accounting `estimate` prints must be what the engine holds (within 5%,
// DESIGN.md). Stage 0 only until the engine implements stages 1-3.
#include <gtest/gtest.h>

#include <cmath>

#include "comm/gloo_communicator.h"
#include "config/config.h"
#include "engine/engine.h"
#include "model/gpt_model.h"
#include "tools/estimate.h"

namespace zerotrain::tools {
namespace {

TEST(EngineAgreement, Fp32Stage0MatchesTheEstimateExactly) {
  auto comm = comm::create_gloo_communicator(comm::CommOptions{});
  ASSERT_TRUE(comm.ok()) << comm.status().to_string();
  const model::GptConfig cfg{
      .n_layer = 2, .n_head = 2, .n_embd = 32, .seq_len = 16, .vocab_size = 64, .padded_vocab = 64};
  StatusOr<model::GptModel> m = model::GptModel::create(cfg, {.max_batch = 2});
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  m->init_parameters(7);
  config::TrainerArgs args;
  StatusOr<config::Config> c = config::parse_config(
      R"({"train_batch_size": 2, "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}})", args);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  auto e = engine::Engine::create(*c, &*m, comm->get(), {.configure_threads = false});
  ASSERT_TRUE(e.ok()) << e.status().to_string();

  const engine::MemoryReport r = (*e)->memory();
  const MemoryEstimate want =
      *zerotrain_model_states({.params = r.numel, .dtype = TrainDtype::kFp32}, 0, false);
  EXPECT_EQ(r.model_states.total(), want.device_bytes + want.host_bytes_per_rank);
  EXPECT_LE(std::abs(static_cast<double>(r.model_states.total() - want.device_bytes)),
            0.05 * static_cast<double>(want.device_bytes));
}

}  // namespace
}  // namespace zerotrain::tools
