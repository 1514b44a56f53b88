// Every shipped example parses, has the values its name promises, and its
// effective config parses back to the same effective config.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/config.h"
#include "config/test_util.h"

namespace zerotrain::config {
namespace {

using testing::full_args;
using ::testing::HasSubstr;
using testing::parse_ok;

std::string example(const std::string& name) { return std::string(ZT_EXAMPLES_DIR) + "/" + name; }

Config load(const std::string& name, const TrainerArgs& args) {
  StatusOr<Config> c = load_config_file(example(name), args);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.ok() ? *c : Config{};
}

// The trainer arguments an example is meant for: explicit values that
// contradict an argument are refused, so each file gets matching ones.
TrainerArgs args_for(const std::string& file) {
  TrainerArgs args = full_args();
  if (file.find("zero0") != std::string::npos) return TrainerArgs{};
  if (file.find("fp16") != std::string::npos) args.bf16 = false, args.fp16 = true;
  return args;
}

Config load(const std::string& name) { return load(name, args_for(name)); }

TEST(ConfigExamples, EveryExampleParses) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(ZT_EXAMPLES_DIR)) {
    if (entry.path().extension() != ".json") continue;
    ++count;
    StatusOr<Config> c = load_config_file(entry.path().string(), args_for(entry.path()));
    EXPECT_TRUE(c.ok()) << entry.path() << ": " << c.status().to_string();
  }
  EXPECT_GE(count, 4);
}

TEST(ConfigExamples, Zero2OffloadsOptimizerInBf16) {
  Config c = load("ds_config_zero2.json");
  EXPECT_EQ(c.zero.stage, 2);
  EXPECT_EQ(c.model_dtype(), DType::kBFloat16);
  EXPECT_EQ(c.zero.offload_optimizer.device, OffloadDevice::kCpu);
  EXPECT_FALSE(c.zero.offload_param.enabled());
  EXPECT_EQ(c.zero.allgather_bucket_size, 200000000);
  EXPECT_EQ(c.zero.reduce_bucket_size, 200000000);
  EXPECT_TRUE(c.zero.overlap_comm);
  EXPECT_EQ(c.steps_per_print, 100000);
  EXPECT_EQ(c.optimizer.type, OptimizerType::kAdamW);
  EXPECT_EQ(c.scheduler.type, SchedulerType::kWarmupLR);
  EXPECT_EQ(c.batch.train_batch_size, 16);
}

TEST(ConfigExamples, Zero3OffloadsBothAndWarnsAboutTheOldSpelling) {
  Config c = load("ds_config_zero3.json");
  EXPECT_EQ(c.zero.stage, 3);
  EXPECT_TRUE(c.zero.offload_param.enabled());
  EXPECT_TRUE(c.zero.offload_optimizer.enabled());
  EXPECT_EQ(c.zero.reduce_bucket_size, 589824);
  EXPECT_EQ(c.zero.stage3_prefetch_bucket_size, 530841);
  EXPECT_EQ(c.zero.stage3_param_persistence_threshold, 7680);
  EXPECT_EQ(c.zero.stage3_max_live_parameters, 1000000000);
  EXPECT_TRUE(c.zero.stage3_gather_16bit_weights_on_model_save);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_THAT(c.warnings[0], HasSubstr("stage3_gather_fp16_weights_on_model_save: deprecated"));
}

TEST(ConfigExamples, Zero2Fp16UsesDynamicLossScaling) {
  Config c = load("ds_config_zero2_fp16.json");
  EXPECT_EQ(c.model_dtype(), DType::kFloat16);
  EXPECT_TRUE(c.fp16.dynamic());
  EXPECT_EQ(c.fp16.initial_scale_power, 16);
  EXPECT_EQ(c.fp16.hysteresis, 2);
  EXPECT_FALSE(c.zero.offload_optimizer.enabled());
}

TEST(ConfigExamples, Zero0NeedsNoTrainerArguments) {
  Config c = load("ds_config_zero0.json", TrainerArgs{});  // no arguments at all
  EXPECT_EQ(c.zero.stage, 0);
  EXPECT_EQ(c.model_dtype(), DType::kFloat32);
  EXPECT_EQ(c.batch.train_batch_size, 8);
  EXPECT_EQ(c.scheduler.type, SchedulerType::kWarmupDecayLR);
  EXPECT_TRUE(c.resolved_from_auto.empty());
}

TEST(ConfigExamples, EffectiveConfigRoundTrips) {
  for (const char* name : {"ds_config_zero0.json", "ds_config_zero2.json",
                           "ds_config_zero2_fp16.json", "ds_config_zero3.json"}) {
    Config first = load(name, args_for(name));
    std::string effective = effective_config_json(first);
    // Resolved values are now explicit; only the world size must be given again.
    TrainerArgs again;
    again.world_size = first.batch.world_size;
    Config second = parse_ok(effective, again);
    second.resolved_from_auto = first.resolved_from_auto;
    second.auto_sources = first.auto_sources;
    second.warnings = first.warnings;
    EXPECT_EQ(effective_config_json(second), effective) << name;
  }
}

}  // namespace
}  // namespace zerotrain::config
