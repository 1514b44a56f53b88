// Value parsing: numbers, booleans, comments, duplicates, syntax errors,
// DeepSpeed defaults, old spellings and DeepSpeed options zerotrain lacks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.h"
#include "config/test_util.h"

namespace zerotrain::config {
namespace {

using testing::error_at;
using ::testing::HasSubstr;
using testing::parse;
using testing::parse_ok;

TEST(ConfigParse, ScientificAndQuotedNumbersParseToIntegers) {
  Config c = parse_ok(R"({"train_batch_size": "500", "zero_optimization": {
      "allgather_bucket_size": 2e8, "reduce_bucket_size": "2e8", "sub_group_size": 5e8}})");
  EXPECT_EQ(c.zero.allgather_bucket_size, 200000000);
  EXPECT_EQ(c.zero.reduce_bucket_size, 200000000);
  EXPECT_EQ(c.zero.sub_group_size, 500000000);
  EXPECT_EQ(c.batch.train_batch_size, 500);
}

TEST(ConfigParse, OnlyDecimalNumericStringsAreNumbers) {
  ParseResult r = parse(R"({"train_batch_size": "0x10", "gradient_clipping": "inf",
      "steps_per_print": " 10"})");
  EXPECT_EQ(error_at(r, "train_batch_size"), "expected an integer, got \"0x10\"");
  EXPECT_EQ(error_at(r, "gradient_clipping"), "expected a number, got \"inf\"");
  EXPECT_EQ(error_at(r, "steps_per_print"), "expected an integer, got \" 10\"");
  EXPECT_EQ(parse_ok(R"({"train_batch_size": 8, "gradient_clipping": "0.5"})").gradient_clipping,
            0.5);
}

TEST(ConfigParse, IntegerKeyRefusesAFraction) {
  ParseResult r = parse(R"({"train_batch_size": 8, "zero_optimization": {"stage": 1.5}})");
  EXPECT_FALSE(r.config);
  EXPECT_EQ(error_at(r, "zero_optimization.stage"), "must be an integer, got 1.5");
}

TEST(ConfigParse, WrongTypeNamesTheExpectedTypeAndTheValue) {
  ParseResult r = parse(R"({"train_batch_size": 8, "steps_per_print": "often",
      "zero_optimization": {"overlap_comm": 3, "offload_optimizer": {"device": 1}},
      "fp16": {"loss_scale": [1]}, "optimizer": {"type": "AdamW", "params": {"betas": 0.9}}})");
  EXPECT_EQ(error_at(r, "steps_per_print"), "expected an integer, got \"often\"");
  EXPECT_EQ(error_at(r, "zero_optimization.overlap_comm"),
            "expected a boolean (true or false), got 3");
  EXPECT_EQ(error_at(r, "zero_optimization.offload_optimizer.device"), "expected a string, got 1");
  EXPECT_EQ(error_at(r, "fp16.loss_scale"), "expected a number, got [1]");
  EXPECT_EQ(error_at(r, "optimizer.params.betas"), "expected a list of two numbers, got 0.9");
}

TEST(ConfigParse, BooleansAreTrueFalseOrTheirQuotedSpelling) {
  Config c = parse_ok(R"({"train_batch_size": 8, "wall_clock_breakdown": "true",
      "bf16": {"enabled": true}})");
  EXPECT_TRUE(c.wall_clock_breakdown);
  EXPECT_TRUE(c.bf16.enabled);
  ParseResult r = parse(R"({"train_batch_size": 8, "wall_clock_breakdown": 1,
      "memory_breakdown": "yes"})");
  EXPECT_EQ(error_at(r, "wall_clock_breakdown"), "expected a boolean (true or false), got 1");
  EXPECT_EQ(error_at(r, "memory_breakdown"), "expected a boolean (true or false), got \"yes\"");
}

TEST(ConfigParse, CommentsAreAllowedAndDuplicateKeysAreNot) {
  Config c = parse_ok("{\n// hjson-style comment\n\"train_batch_size\": 8 /* inline */\n}");
  EXPECT_EQ(c.batch.train_batch_size, 8);
  ParseResult r = parse(R"({"train_batch_size": 8,
      "zero_optimization": {"stage": 1, "stage": 2}})");
  EXPECT_FALSE(r.config);
  EXPECT_EQ(error_at(r, "zero_optimization.stage"), "duplicate key");
}

TEST(ConfigParse, DocumentMustBeAnObject) {
  ParseResult r = parse("[1, 2]");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].to_string(), "a DeepSpeed config must be a JSON object, got [1,2]");
}

// The position is nlohmann's: the last character of the offending token.
TEST(ConfigParse, SyntaxErrorGivesLineAndColumn) {
  ParseResult r = parse("{\n  \"train_batch_size\": 8,\n  \"steps_per_print\" 10\n}");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].path, "");
  EXPECT_THAT(r.errors[0].message,
              HasSubstr("JSON syntax error at line 3, column 22: syntax error while "
                        "parsing object separator"));
}

TEST(ConfigParse, DefaultsAreDeepSpeeds) {
  Config c = parse_ok(R"({"train_batch_size": 8})");
  EXPECT_EQ(c.zero.stage, 0);
  EXPECT_EQ(c.zero.reduce_bucket_size, 500000000);
  EXPECT_EQ(c.zero.allgather_bucket_size, 500000000);
  EXPECT_EQ(c.zero.stage3_prefetch_bucket_size, 50000000);
  EXPECT_EQ(c.zero.stage3_param_persistence_threshold, 100000);
  EXPECT_FALSE(c.zero.overlap_comm);  // stage < 3
  EXPECT_TRUE(c.zero.offload_optimizer.pin_memory);
  EXPECT_EQ(c.gradient_clipping, 1.0);
  EXPECT_FALSE(c.steps_per_print.has_value());
  EXPECT_EQ(c.fp16.initial_scale_power, 16);
  EXPECT_EQ(c.fp16.loss_scale_window, 1000);
  EXPECT_TRUE(c.bf16.check_grad_overflow);
  EXPECT_EQ(c.optimizer.type, OptimizerType::kNone);
  EXPECT_EQ(c.model_dtype(), DType::kFloat32);
  Config z3 = parse_ok(R"({"train_batch_size": 8, "zero_optimization": {"stage": 3}})");
  EXPECT_TRUE(z3.zero.overlap_comm);  // DeepSpeed: on by default at stage 3 only
}

TEST(ConfigParse, OptimizerAndSchedulerDefaultsFollowTheirType) {
  Config c = parse_ok(R"({"train_batch_size": 8,
      "optimizer": {"type": "adamw", "params": {"lr": 2e-4}},
      "scheduler": {"type": "WarmupLR"}})");
  EXPECT_EQ(c.optimizer.type, OptimizerType::kAdamW);  // type names are case-insensitive
  EXPECT_TRUE(c.optimizer.decoupled_weight_decay());
  EXPECT_EQ(c.optimizer.betas[1], 0.999);
  EXPECT_EQ(c.scheduler.warmup_max_lr, 2e-4);  // WarmupLR: unset max = optimizer lr
  EXPECT_EQ(c.scheduler.warmup_num_steps, 1000);
  Config d = parse_ok(R"({"train_batch_size": 8, "optimizer": {"type": "SGD"},
      "scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 10}}})");
  EXPECT_EQ(d.scheduler.warmup_max_lr, 0.001);  // WarmupDecayLR's own default
  Config o = parse_ok(R"({"train_batch_size": 8, "optimizer": {"type": "SGD"},
      "scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 1e-4, "cycle_max_lr": 1e-3,
      "cycle_first_step_size": 300}}})");
  EXPECT_EQ(o.scheduler.cycle_second_step_size, 300);  // unset second half = first
}

TEST(ConfigParse, OldSpellingsAreAcceptedWithAWarning) {
  ParseResult r = parse(R"({"train_batch_size": 8, "bfloat16": {"enabled": true},
      "zero_optimization": {"stage": 3, "cpu_offload": true,
        "stage3_gather_fp16_weights_on_model_save": true, "prefetch_bucket_size": 1000}})");
  ASSERT_TRUE(r.config) << r.status().to_string();
  EXPECT_TRUE(r.config->bf16.enabled);
  EXPECT_EQ(r.config->zero.offload_optimizer.device, OffloadDevice::kCpu);
  EXPECT_TRUE(r.config->zero.stage3_gather_16bit_weights_on_model_save);
  EXPECT_EQ(r.config->zero.stage3_prefetch_bucket_size, 1000);  // a silent alternate name
  ASSERT_EQ(r.warnings.size(), 3u);
  EXPECT_EQ(r.warnings[0].path, "bfloat16");
  EXPECT_EQ(r.warnings[0].message, "deprecated spelling of 'bf16'; write that instead");
}

TEST(ConfigParse, PreOffloadSectionSpellingsMapToTheOffloadSections) {
  ParseResult r = parse(R"({"train_batch_size": 8, "zero_optimization": {"stage": 3,
      "cpu_offload": true, "cpu_offload_param": true, "cpu_offload_use_pin_memory": false}})");
  ASSERT_TRUE(r.config) << r.status().to_string();
  EXPECT_EQ(r.config->zero.offload_optimizer.device, OffloadDevice::kCpu);
  EXPECT_EQ(r.config->zero.offload_param.device, OffloadDevice::kCpu);
  EXPECT_FALSE(r.config->zero.offload_optimizer.pin_memory);
  EXPECT_FALSE(r.config->zero.offload_param.pin_memory);
  EXPECT_EQ(r.warnings.size(), 3u);
}

TEST(ConfigParse, OldAndNewSpellingTogetherIsAnError) {
  ParseResult r = parse(R"({"train_batch_size": 8, "zero_optimization": {"stage": 3,
      "stage3_gather_fp16_weights_on_model_save": true,
      "stage3_gather_16bit_weights_on_model_save": false,
      "cpu_offload": true, "offload_optimizer": {"device": "cpu"}}})");
  EXPECT_FALSE(r.config);
  EXPECT_EQ(error_at(r, "zero_optimization.stage3_gather_16bit_weights_on_model_save"),
            "'zero_optimization.stage3_gather_fp16_weights_on_model_save' and "
            "'zero_optimization.stage3_gather_16bit_weights_on_model_save' are the same option; "
            "give it once, as 'zero_optimization.stage3_gather_16bit_weights_on_model_save'");
  EXPECT_THAT(error_at(r, "zero_optimization.cpu_offload"), HasSubstr("not both"));
}

TEST(ConfigParse, DeepSpeedOptionsZerotrainLacksPassOnlyAtTheirDefault) {
  Config c = parse_ok(R"({"train_batch_size": 8, "hybrid_engine": {"enabled": false,
      "max_out_tokens": 512}, "activation_checkpointing": {"partition_activations": false},
      "zero_optimization": {"zero_quantized_weights": false, "mics_shard_size": -1}})");
  EXPECT_EQ(c.zero.stage, 0);
  ParseResult r = parse(R"({"train_batch_size": 8, "hybrid_engine": {"enabled": true},
      "pipeline": {"stages": 2},
      "zero_optimization": {"zero_quantized_weights": true,
        "offload_param": {"device": "nvme"}}, "optimizer": {"type": "Lamb"}})");
  EXPECT_EQ(error_at(r, "zero_optimization.zero_quantized_weights"),
            "'zero_quantized_weights' is not supported by zerotrain (DeepSpeed: ZeRO++ qwZ: "
            "stage 3 all-gathers int8 block-quantized weights); only its default (false) is "
            "accepted");
  EXPECT_EQ(error_at(r, "hybrid_engine"),
            "'hybrid_engine' is not supported by zerotrain (DeepSpeed: DeepSpeed-Chat's switch "
            "between training and inference kernels) (remove it or set enabled: false)");
  EXPECT_THAT(error_at(r, "pipeline"),
              HasSubstr("'pipeline' is not supported by zerotrain (DeepSpeed: pipeline "
                        "parallelism"));
  EXPECT_EQ(error_at(r, "zero_optimization.offload_param.device"),
            "'nvme' is a DeepSpeed choice not supported by zerotrain (supported: none, cpu)");
  EXPECT_THAT(error_at(r, "optimizer.type"),
              HasSubstr("'Lamb' is a DeepSpeed choice not supported by zerotrain"));
}

TEST(ConfigParse, RangesAreChecked) {
  ParseResult r = parse(R"({"train_batch_size": 8, "fp16": {"loss_scale": -1,
      "loss_scale_window": 0, "min_loss_scale": 0}, "zero_optimization": {"stage": 4},
      "optimizer": {"type": "Adam", "params": {"betas": [0.9, 1.5]}}})");
  EXPECT_EQ(error_at(r, "fp16.loss_scale"), "must be >= 0, got -1");
  EXPECT_EQ(error_at(r, "fp16.loss_scale_window"), "must be >= 1, got 0");
  EXPECT_EQ(error_at(r, "fp16.min_loss_scale"), "must be > 0, got 0");
  EXPECT_EQ(error_at(r, "zero_optimization.stage"), "must be >= 0 and <= 3, got 4");
  EXPECT_EQ(error_at(r, "optimizer.params.betas"), "in [0.9,1.5]: must be >= 0 and <= 1, got 1.5");
}

TEST(ConfigParse, LoadConfigFileNamesThePath) {
  StatusOr<Config> missing = load_config_file("/nonexistent/ds.json", {});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent/ds.json"));
  StatusOr<Config> dir = load_config_file(ZT_EXAMPLES_DIR, {});
  EXPECT_EQ(dir.status().code(), StatusCode::kIoError);
  // Config problems: InvalidArgument prefixed with the path. The auto
  // example without trainer arguments cannot resolve its autos.
  const std::string zero2 = std::string(ZT_EXAMPLES_DIR) + "/ds_config_zero2.json";
  StatusOr<Config> autos = load_config_file(zero2, {});
  EXPECT_EQ(autos.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(autos.status().message(),
              ::testing::StartsWith(zero2 + ": invalid DeepSpeed config"));
}

}  // namespace
}  // namespace zerotrain::config
