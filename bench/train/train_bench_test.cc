// Tests of the training-step bench: default shapes, the ds_config it trains
// with, tokens/s and model FLOP/s from step times, and one real (tiny)
// engine run at world size 1.
#include "train/train_bench.h"

#include <gtest/gtest.h>

#include <cmath>

#include "comm/gloo/gloo_communicator.h"
#include "config/config.h"

namespace zerotrain::bench {
namespace {

TEST(TrainBench, DefaultShapesPerModel) {
  const TrainCase tiny = with_default_shape({.model = "gpt2-tiny"});
  EXPECT_EQ(tiny.B, 8);
  EXPECT_EQ(tiny.T, 128);
  EXPECT_EQ(with_default_shape({.model = "gpt2-tiny"}, /*world_size=*/2).B, 4);  // same global
  const TrainCase small = with_default_shape({.model = "gpt2-small-ish"});
  EXPECT_EQ(small.B, 2);
  EXPECT_EQ(small.T, 256);
  EXPECT_EQ(with_default_shape({.model = "gpt2-small-ish"}, 2).B, 1);
  EXPECT_EQ(with_default_shape({.model = "gpt2-small-ish"}, 4).B, 1);  // at least 1
  const TrainCase given = with_default_shape({.model = "gpt2-tiny", .B = 3, .T = 7});
  EXPECT_EQ(given.B, 3);
  EXPECT_EQ(given.T, 7);
}

TEST(TrainBench, DsConfigIsAdamWStageZeroAtTheCaseBatch) {
  config::TrainerArgs args;
  args.world_size = 2;
  auto cfg = config::parse_config(train_ds_config({.bf16 = true, .B = 3, .T = 8}), args);
  ASSERT_TRUE(cfg.ok()) << cfg.status().to_string();
  EXPECT_EQ(cfg->batch.train_micro_batch_size_per_gpu, 3);
  EXPECT_EQ(cfg->batch.gradient_accumulation_steps, 1);
  EXPECT_EQ(cfg->batch.train_batch_size, 6);  // 3 x 2 ranks
  EXPECT_TRUE(cfg->bf16.enabled);
  EXPECT_EQ(cfg->model_dtype(), DType::kBFloat16);
}

TEST(TrainBench, RatesAndJsonFromStepTimes) {
  TrainResult r;
  r.c = {.model = "m", .B = 4, .T = 8, .steps = 3};
  r.ranks = 2, r.threads = 1, r.numel = 1000, r.flops_per_token = 500;
  r.step_seconds = {0.5, 0.25, 1.0};
  r.phases = {.forward = 0.1, .backward = 0.2, .reduce = 0.05, .step = 0.001};
  EXPECT_EQ(tokens_per_step(r), 64);  // 4 x 8 x 2 ranks
  const Samples tps = tokens_per_second(r);
  EXPECT_DOUBLE_EQ(tps.median, 128);  // 64 / 0.5
  EXPECT_DOUBLE_EQ(tps.best, 256);    // 64 / 0.25
  const nlohmann::json j = train_result_json(r);
  EXPECT_EQ(j["precision"], "fp32");
  EXPECT_DOUBLE_EQ(j["model_flops"]["median"].get<double>(), 128.0 * 500);
  EXPECT_DOUBLE_EQ(j["model_flops"]["best"].get<double>(), 256.0 * 500);
  EXPECT_DOUBLE_EQ(j["step_seconds"]["median"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["step_seconds"]["best"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(j["step_seconds"]["worst"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["step_seconds"]["spread"].get<double>(), 1.5);  // (1 - 0.25) / 0.5
  EXPECT_DOUBLE_EQ(j["phase_ms"]["backward"].get<double>(), 200);
  EXPECT_NEAR(j["adamw_gbps"].get<double>(), 28e3 / 0.001 / 1e9, 1e-12);
}

TEST(TrainBench, RunsTheRealEngineAtWorldSizeOne) {
  auto comm = comm::create_gloo_communicator(comm::CommOptions{});
  ASSERT_TRUE(comm.ok()) << comm.status().to_string();
  auto r =
      run_train_case({.model = "gpt2-tiny", .B = 2, .T = 16, .warmup = 1, .steps = 2}, comm->get());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->ranks, 1);
  EXPECT_EQ(r->params, 1853568);
  EXPECT_EQ(r->flops_per_token, 6 * 1853568 + 12 * 4 * 192 * 16);
  ASSERT_EQ(r->step_seconds.size(), 2u);
  EXPECT_GT(r->step_seconds[0], 0);
  EXPECT_GT(r->phases.forward, 0);
  EXPECT_GT(r->phases.backward, 0);
  EXPECT_GT(r->phases.step, 0);
  // Random init over a 256-token vocabulary: the first loss is near ln 256.
  EXPECT_NEAR(r->loss_first, std::log(256.0), 0.5);
  EXPECT_TRUE(std::isfinite(r->loss_last));
}

TEST(TrainBench, RefusesBadCases) {
  auto comm = comm::create_gloo_communicator(comm::CommOptions{});
  ASSERT_TRUE(comm.ok());
  auto too_long = run_train_case({.model = "gpt2-tiny", .B = 1, .T = 129}, comm->get());
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_long.status().message().find("--seq: 129 is outside [1, 128]"), std::string::npos)
      << too_long.status().to_string();
  auto unknown = run_train_case({.model = "gpt3"}, comm->get());
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  auto no_steps = run_train_case({.model = "gpt2-tiny", .steps = 0}, comm->get());
  ASSERT_FALSE(no_steps.ok());
  EXPECT_NE(no_steps.status().message().find("--steps"), std::string::npos);
}

}  // namespace
}  // namespace zerotrain::bench
