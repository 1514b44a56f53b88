// Strict where DeepSpeed is strict, tolerant where it is tolerant (issue
// #21): unknown top-level keys warn unless they look like a known key;
// `_`-prefixed keys are comments; "auto" in the sections DeepSpeed
// validates is its default; an "auto" never fails for want of a flag when
// the trainer's defaults are given, and says where each value came from.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.h"
#include "config/test_util.h"
#include "train/default_config.h"

namespace zerotrain::config {
namespace {

using testing::error_at;
using ::testing::HasSubstr;
using testing::parse;

std::string warnings_of(const ParseResult& r) {
  std::string all;
  for (const ConfigError& w : r.warnings) all += w.to_string() + "\n";
  return all;
}

// The trainer's defaults for every argument, as `zerotrain train` passes
// them: 300 steps (warmup 30), hidden size 64.
TrainerArgs defaults() { return train::default_trainer_args(300, 64); }

TEST(ConfigTolerance, UnknownTopLevelKeyIsIgnoredWithAWarning) {
  ParseResult r = parse(R"({"train_batch_size": 8, "monitor_config": {"enabled": true},
      "cuda_visible_devices": "0,1"})");
  ASSERT_TRUE(r.config) << r.status().to_string();
  EXPECT_THAT(warnings_of(r), HasSubstr("monitor_config: unknown key 'monitor_config', ignored "
                                        "(as DeepSpeed ignores it)"));
  EXPECT_THAT(warnings_of(r), HasSubstr("cuda_visible_devices: unknown key"));
}

TEST(ConfigTolerance, UnderscoreKeysAreCommentsSilently) {
  ParseResult r = parse(R"({"_comment": "bf16 run", "train_batch_size": 8,
      "_read_the_docs": ["x"]})");
  ASSERT_TRUE(r.config) << r.status().to_string();
  EXPECT_TRUE(r.warnings.empty()) << warnings_of(r);
}

TEST(ConfigTolerance, UnknownKeysWarnInDictGetSectionsAndFailInValidatedOnes) {
  ParseResult r = parse(R"({"train_batch_size": 8, "checkpoint": {"keep_last": 3},
      "zero_optimization": {"stage": 1, "writer": "fast"}})");
  EXPECT_THAT(warnings_of(r), HasSubstr("checkpoint.keep_last: unknown key 'keep_last', ignored"));
  EXPECT_THAT(error_at(r, "zero_optimization.writer"), HasSubstr("unknown key 'writer'"));
}

TEST(ConfigTolerance, AutoInAValidatedSectionIsDeepSpeedsDefault) {
  ParseResult r = parse(R"({"train_batch_size": 8, "zero_optimization": {"stage": 3,
      "stage3_gather_16bit_weights_on_model_save": "auto", "sub_group_size": "auto",
      "overlap_comm": "auto"}})");
  ASSERT_TRUE(r.config) << r.status().to_string();
  EXPECT_FALSE(r.config->zero.stage3_gather_16bit_weights_on_model_save);
  EXPECT_EQ(r.config->zero.sub_group_size, 1'000'000'000);
  EXPECT_TRUE(r.config->zero.overlap_comm);  // DeepSpeed's default: on at stage 3
  EXPECT_EQ(r.config->auto_sources.at("zero_optimization.sub_group_size"), "DeepSpeed default");
  // Not where a silent default changes the whole run.
  ParseResult device = parse(R"({"train_batch_size": 8, "zero_optimization": {"stage": 2,
      "offload_optimizer": {"device": "auto"}}})");
  EXPECT_THAT(error_at(device, "zero_optimization.offload_optimizer.device"),
              HasSubstr("does not accept \"auto\""));
  // Nor at the top level, where DeepSpeed would crash on the string.
  ParseResult top = parse(R"({"train_batch_size": 8, "steps_per_print": "auto"})");
  EXPECT_THAT(error_at(top, "steps_per_print"), HasSubstr("does not accept \"auto\""));
}

TEST(ConfigTolerance, EveryAutoResolvesFromAFlagOrItsDefaultAndSaysWhich) {
  TrainerArgs given;
  given.world_size = 2;
  given.lr = 5e-4;  // the user gave --lr
  const char* text = R"({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
      "gradient_accumulation_steps": "auto", "gradient_clipping": "auto",
      "fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"},
      "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto",
                                                "weight_decay": "auto"}},
      "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": "auto",
          "warmup_max_lr": "auto", "warmup_num_steps": "auto", "total_num_steps": "auto"}},
      "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto",
          "stage3_prefetch_bucket_size": "auto", "stage3_param_persistence_threshold": "auto"}})";
  ParseResult r = parse_config_detailed(text, given, defaults());
  ASSERT_TRUE(r.config) << r.status().to_string();
  const Config& c = *r.config;
  EXPECT_EQ(c.optimizer.lr, 5e-4);
  EXPECT_EQ(c.auto_sources.at("optimizer.params.lr"), "--lr");
  EXPECT_EQ(c.scheduler.warmup_max_lr, 5e-4);
  EXPECT_EQ(c.optimizer.weight_decay, 0.01);
  EXPECT_EQ(c.auto_sources.at("optimizer.params.weight_decay"), "default of --weight-decay");
  EXPECT_FALSE(c.fp16.enabled);
  EXPECT_FALSE(c.bf16.enabled);
  EXPECT_EQ(c.auto_sources.at("bf16.enabled"), "default of --bf16");
  EXPECT_EQ(c.batch.train_micro_batch_size_per_gpu, 8);
  EXPECT_EQ(c.batch.train_batch_size, 16);  // 8 x 1 x 2 ranks
  EXPECT_EQ(c.auto_sources.at("train_batch_size"), "derived");
  EXPECT_EQ(c.scheduler.total_num_steps, 300);
  EXPECT_EQ(c.zero.reduce_bucket_size, 64 * 64);
  EXPECT_EQ(c.zero.stage3_prefetch_bucket_size, 64 * 64 * 9 / 10);
  EXPECT_EQ(c.zero.stage3_param_persistence_threshold, 640);
  EXPECT_EQ(c.resolved_from_auto.size(), c.auto_sources.size());
}

TEST(ConfigTolerance, DefaultsAreNeverComparedWithExplicitValues) {
  // lr 3e-4 differs from the default 2e-3 and micro batch 4 from 8: both
  // stand, as the user wrote them; only a flag the user gave must agree.
  const char* text = R"({"train_micro_batch_size_per_gpu": 4, "train_batch_size": "auto",
      "optimizer": {"type": "AdamW", "params": {"lr": 3e-4}}})";
  TrainerArgs given;
  ParseResult ok = parse_config_detailed(text, given, defaults());
  ASSERT_TRUE(ok.config) << ok.status().to_string();
  EXPECT_EQ(ok.config->optimizer.lr, 3e-4);
  EXPECT_EQ(ok.config->batch.train_batch_size, 4);
  given.lr = 1e-3;
  ParseResult clash = parse_config_detailed(text, given, defaults());
  EXPECT_THAT(error_at(clash, "optimizer.params.lr"),
              HasSubstr("but the trainer argument 'lr' is 0.001"));
}

TEST(ConfigTolerance, NoBatchKeyTakesTheTrainersMicroBatch) {
  TrainerArgs given;
  given.world_size = 2;
  ParseResult r =
      parse_config_detailed(R"({"zero_optimization": {"stage": 2}})", given, defaults());
  ASSERT_TRUE(r.config) << r.status().to_string();
  EXPECT_EQ(r.config->batch.train_micro_batch_size_per_gpu, 8);
  EXPECT_EQ(r.config->batch.train_batch_size, 16);
  EXPECT_EQ(r.config->auto_sources.at("train_micro_batch_size_per_gpu"),
            "default of --micro-batch, not in the config");
  // Without a trainer (no defaults), DeepSpeed's rule: one of them is needed.
  ParseResult bare = parse(R"({"zero_optimization": {"stage": 2}})");
  EXPECT_THAT(error_at(bare, "train_batch_size"), HasSubstr("must be given"));
}

TEST(ConfigTolerance, NoOptimizerOrSchedulerSectionTakesTheTrainersAsHfDoes) {
  TrainerArgs given;
  given.lr = 5e-4;
  ParseResult r =
      parse_config_detailed(R"({"train_micro_batch_size_per_gpu": 4})", given, defaults());
  ASSERT_TRUE(r.config) << r.status().to_string();
  const Config& c = *r.config;
  EXPECT_EQ(c.optimizer.type, OptimizerType::kAdamW);
  EXPECT_EQ(c.optimizer.lr, 5e-4);
  EXPECT_EQ(c.optimizer.weight_decay, 0.01);
  EXPECT_EQ(c.scheduler.type, SchedulerType::kWarmupDecayLR);
  EXPECT_EQ(c.scheduler.warmup_max_lr, 5e-4);
  EXPECT_EQ(c.scheduler.warmup_num_steps, 30);
  EXPECT_EQ(c.scheduler.total_num_steps, 300);
  EXPECT_EQ(c.scheduler.warmup_type, WarmupType::kLinear);
  EXPECT_EQ(c.auto_sources.at("optimizer.params.lr"), "the trainer's AdamW (no optimizer section)");
  // A section the config has is the config's; without a trainer there is
  // nothing to supply (the engine then asks for an optimizer section).
  ParseResult own = parse_config_detailed(R"({"train_micro_batch_size_per_gpu": 4,
      "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 5}}})",
                                          given, defaults());
  ASSERT_TRUE(own.config) << own.status().to_string();
  EXPECT_EQ(own.config->scheduler.type, SchedulerType::kWarmupLR);
  EXPECT_EQ(own.config->scheduler.warmup_num_steps, 5);
  EXPECT_EQ(parse(R"({"train_micro_batch_size_per_gpu": 4})").config->optimizer.type,
            OptimizerType::kNone);
}

TEST(ConfigTolerance, ZeroSizesMeanOneTensorEachAsInDeepSpeed) {
  ParseResult r = parse(R"({"train_batch_size": 8, "zero_optimization": {"stage": 3,
      "sub_group_size": 0, "reduce_bucket_size": 0, "stage3_prefetch_bucket_size": 0}})");
  ASSERT_TRUE(r.config) << r.status().to_string();
  EXPECT_EQ(r.config->zero.sub_group_size, 0);
  EXPECT_EQ(r.config->zero.reduce_bucket_size, 0);
  EXPECT_THAT(error_at(parse(R"({"train_batch_size": 8,
      "zero_optimization": {"sub_group_size": -1}})"),
                       "zero_optimization.sub_group_size"),
              HasSubstr("must be >= 0"));
}

TEST(ConfigTolerance, ActivationCheckpointingIsOnOnlyWhenItsSectionIsThere) {
  ParseResult none = parse(R"({"train_batch_size": 8})");
  ASSERT_TRUE(none.config);
  EXPECT_FALSE(none.config->activation_checkpointing.enabled);
  ParseResult empty = parse(R"({"train_batch_size": 8, "activation_checkpointing": {}})");
  ASSERT_TRUE(empty.config);
  EXPECT_TRUE(empty.config->activation_checkpointing.enabled);
  ParseResult set = parse(R"({"train_batch_size": 8, "activation_checkpointing": {
      "number_checkpoints": 4, "synchronize_checkpoint_boundary": true, "profile": true,
      "cpu_checkpointing": true, "contiguous_memory_optimization": true}})");
  ASSERT_TRUE(set.config) << set.status().to_string();
  const auto& a = set.config->activation_checkpointing;
  EXPECT_EQ(a.number_checkpoints, 4);
  EXPECT_TRUE(a.synchronize_checkpoint_boundary && a.profile && a.cpu_checkpointing &&
              a.contiguous_memory_optimization);
  EXPECT_EQ(warnings_of(set), "");
  EXPECT_THAT(error_at(parse(R"({"train_batch_size": 8, "activation_checkpointing": {
      "number_checkpoints": 0}})"),
                       "activation_checkpointing.number_checkpoints"),
              HasSubstr(">= 1"));
}

TEST(ConfigTolerance, IgnoredKeysWarnAndLackingFeaturesAreRefusedByName) {
  ParseResult r = parse(R"({"train_batch_size": 8,
      "bf16": {"enabled": true, "loss_scale": 0, "initial_scale_power": 16},
      "activation_checkpointing": {"partition_activations": true},
      "aio": {"thread_count": 4}, "timers": {"throughput": {"enabled": true}},
      "fp16": {"auto_cast": true}, "zero_optimization": {"elastic_checkpoint": true}})");
  ASSERT_TRUE(r.config) << r.status().to_string();
  const std::string w = warnings_of(r);
  EXPECT_THAT(w, HasSubstr("bf16.loss_scale: ignored: an fp16 key"));
  // The section switches checkpointing on (train/activation_checkpointing.h).
  EXPECT_TRUE(r.config->activation_checkpointing.enabled);
  EXPECT_TRUE(r.config->activation_checkpointing.partition_activations);
  EXPECT_THAT(w, HasSubstr("aio.thread_count: ignored: DeepSpeed's docs name it"));
  ParseResult refused = parse(R"({"train_batch_size": 8, "wandb": {"enabled": true},
      "fp8": {"enabled": true}, "sequence_parallel": {"enabled": false}})");
  EXPECT_THAT(error_at(refused, "wandb"), HasSubstr("--metrics"));
  EXPECT_THAT(error_at(refused, "fp8"),
              HasSubstr("'fp8' is not supported by zerotrain (DeepSpeed: fp8 training through "
                        "Transformer Engine) (remove it or set enabled: false)"));
  EXPECT_EQ(refused.errors.size(), 2u) << refused.status().to_string();
}

TEST(ConfigTolerance, CommsLoggerOpsAreDeepSpeedsNames) {
  Config c = testing::parse_ok(R"({"train_batch_size": 8, "comms_logger": {"enabled": true,
      "prof_all": false, "prof_ops": ["all_reduce", "all_gather_into_tensor"]}})");
  EXPECT_TRUE(c.comms_logger.enabled);
  EXPECT_EQ(c.comms_logger.prof_ops,
            (std::vector<std::string>{"all_reduce", "all_gather_into_tensor"}));
  ParseResult typo =
      parse(R"({"train_batch_size": 8, "comms_logger": {"prof_ops": ["all_reduse"]}})");
  EXPECT_THAT(error_at(typo, "comms_logger.prof_ops"), HasSubstr("did you mean 'all_reduce'?"));
}

}  // namespace
}  // namespace zerotrain::config
