// "auto" resolution from TrainerArgs (HF integration rules) and the
// provenance the effective config prints.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "config/test_util.h"

namespace zerotrain::config {
namespace {

using ::testing::ElementsAre;
using testing::error_at;
using testing::full_args;
using ::testing::HasSubstr;
using testing::parse;
using testing::parse_ok;

constexpr const char* kZero3Autos = R"({
  "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
  "gradient_accumulation_steps": "auto", "gradient_clipping": "auto",
  "bf16": {"enabled": "auto"},
  "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto",
                                            "weight_decay": "auto"}},
  "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": "auto",
      "warmup_max_lr": "auto", "warmup_num_steps": "auto", "total_num_steps": "auto"}},
  "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto",
      "stage3_prefetch_bucket_size": "auto", "stage3_param_persistence_threshold": "auto"}})";

TEST(ConfigAuto, BucketSizesFromHiddenSize768) {
  Config c = parse_ok(kZero3Autos, full_args());
  EXPECT_EQ(c.zero.reduce_bucket_size, 589824);                // 768²
  EXPECT_EQ(c.zero.stage3_prefetch_bucket_size, 530841);       // ⌊0.9 · 768²⌋
  EXPECT_EQ(c.zero.stage3_param_persistence_threshold, 7680);  // 10 · 768
}

TEST(ConfigAuto, TrainerArgumentsFillEveryAuto) {
  Config c = parse_ok(kZero3Autos, full_args());
  EXPECT_EQ(c.batch.train_micro_batch_size_per_gpu, 4);
  EXPECT_EQ(c.batch.gradient_accumulation_steps, 2);
  EXPECT_EQ(c.batch.train_batch_size, 16);  // 4 × 2 × world 2
  EXPECT_EQ(c.gradient_clipping, 0.5);
  EXPECT_TRUE(c.bf16.enabled);
  EXPECT_EQ(c.optimizer.lr, 3e-4);
  EXPECT_EQ(c.optimizer.betas[1], 0.95);
  EXPECT_EQ(c.optimizer.eps, 1e-8);
  EXPECT_EQ(c.optimizer.weight_decay, 0.1);
  EXPECT_EQ(c.scheduler.warmup_min_lr, 0.0);
  EXPECT_EQ(c.scheduler.warmup_max_lr, 3e-4);
  EXPECT_EQ(c.scheduler.warmup_num_steps, 100);
  EXPECT_EQ(c.scheduler.total_num_steps, 1000);
  EXPECT_EQ(c.resolved_from_auto.size(), 16u);
  EXPECT_EQ(c.resolved_from_auto.front(), "train_batch_size");
}

TEST(ConfigAuto, UnresolvableAutoNamesKeyAndArgument) {
  TrainerArgs args = full_args();
  args.hidden_size.reset();
  args.warmup_steps.reset();
  ParseResult r = parse(kZero3Autos, args);
  EXPECT_FALSE(r.config);
  EXPECT_EQ(error_at(r, "zero_optimization.reduce_bucket_size"),
            "is \"auto\" but the trainer argument 'hidden_size' it is resolved from is not "
            "known here; give --model or write a value");
  EXPECT_THAT(error_at(r, "scheduler.params.warmup_num_steps"), HasSubstr("'warmup_steps'"));
  EXPECT_EQ(r.errors.size(), 4u) << r.status().to_string();
}

TEST(ConfigAuto, AutoWithoutAnyTrainerArgumentsIsRefused) {
  ParseResult r = parse(R"({"train_micro_batch_size_per_gpu": "auto"})");
  EXPECT_THAT(error_at(r, "train_micro_batch_size_per_gpu"),
              HasSubstr("trainer argument 'micro_batch_per_gpu'"));
}

TEST(ConfigAuto, KeysThatCannotBeResolvedRefuseAuto) {
  ParseResult r = parse(R"({"train_batch_size": 8, "zero_optimization": {"stage": "auto"}})");
  EXPECT_EQ(error_at(r, "zero_optimization.stage"),
            "does not accept \"auto\" (docs/config.md lists the keys that do)");
}

TEST(ConfigAuto, ExplicitValueContradictingTheTrainerIsAnError) {
  ParseResult r = parse(R"({"train_micro_batch_size_per_gpu": 8,
      "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}}})",
                        full_args());
  EXPECT_EQ(error_at(r, "train_micro_batch_size_per_gpu"),
            "is 8 but the trainer argument 'micro_batch_per_gpu' is 4; make them agree (or "
            "write \"auto\")");
  EXPECT_THAT(error_at(r, "optimizer.params.lr"), HasSubstr("'lr' is 0.0003"));
}

TEST(ConfigAuto, DerivedBatchSizesMustAgreeWithTheTrainer) {
  // micro 4 × gas 2 × world 2 = 16 by the trainer; 32 derives micro 16.
  ParseResult r = parse(R"({"train_batch_size": 32})", full_args());
  ASSERT_EQ(r.errors.size(), 2u) << r.status().to_string();
  EXPECT_EQ(r.errors[0].message,
            "gives train_micro_batch_size_per_gpu 16 (train_batch_size 32, world_size 2) but "
            "the trainer argument 'micro_batch_per_gpu' is 4");
  EXPECT_THAT(r.errors[1].message, HasSubstr("'gradient_accumulation_steps' is 2"));
  EXPECT_TRUE(
      parse(R"({"train_batch_size": 16, "gradient_accumulation_steps": 2})", full_args()).config);
}

TEST(ConfigAuto, ResolvedValueIsValidatedLikeAWrittenOne) {
  TrainerArgs args = full_args();
  args.eps = -1.0;
  ParseResult r = parse(R"({"train_batch_size": 16, "gradient_accumulation_steps": 2,
      "optimizer": {"type": "AdamW", "params": {"eps": "auto"}}})",
                        args);
  EXPECT_EQ(error_at(r, "optimizer.params.eps"),
            "\"auto\" resolved to -1.0, which must be > 0, got -1.0");
}

TEST(ConfigAuto, EffectiveConfigMarksResolvedKeys) {
  TrainerArgs args = full_args();
  Config c = parse_ok(R"({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
      "zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"}})",
                      args);
  nlohmann::json j = nlohmann::json::parse(effective_config_json(c));
  EXPECT_EQ(j["zero_optimization"]["reduce_bucket_size"], 589824);
  EXPECT_EQ(j["train_batch_size"], 16);  // HF: micro 4 × gas 2 × world 2 from the trainer
  EXPECT_EQ(j["gradient_accumulation_steps"], 2);  // then derived from it
  EXPECT_EQ(j["_zerotrain"]["world_size"], 2);
  EXPECT_THAT(j["_zerotrain"]["resolved_from_auto"].get<std::vector<std::string>>(),
              ElementsAre("train_batch_size", "train_micro_batch_size_per_gpu",
                          "zero_optimization.reduce_bucket_size"));
}

TEST(ConfigEffective, PrintsOnlyTheParametersOfTheChosenTypes) {
  Config c = parse_ok(R"({"train_batch_size": 8, "zero_force_ds_cpu_optimizer": false,
      "optimizer": {"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9}}})");
  nlohmann::json j = nlohmann::json::parse(effective_config_json(c));
  EXPECT_EQ(j["optimizer"]["params"]["momentum"], 0.9);
  EXPECT_FALSE(j["optimizer"]["params"].contains("betas"));  // an Adam parameter
  EXPECT_FALSE(j.contains("scheduler"));                     // none configured
  EXPECT_EQ(j["zero_force_ds_cpu_optimizer"], false);  // accepted, inert, still printed as given
  EXPECT_EQ(c.inert_values.at("zero_force_ds_cpu_optimizer"), "false");
}

}  // namespace
}  // namespace zerotrain::config
