// Error reporting: unknown keys with "did you mean", keys at the wrong level,
// every problem in one pass, and the cross-field rules.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.h"
#include "config/test_util.h"

namespace zerotrain::config {
namespace {

using testing::error_at;
using ::testing::HasSubstr;
using testing::parse;

TEST(ConfigErrors, TypoAtDepthThreeGivesFullPathAndSuggestion) {
  ParseResult r = parse(R"({"train_batch_size": 8, "zero_optimization": {"stage": 2,
      "offload_optimizer": {"device": "cpu", "pin_memroy": true}}})");
  EXPECT_FALSE(r.config);
  EXPECT_EQ(error_at(r, "zero_optimization.offload_optimizer.pin_memroy"),
            "unknown key 'pin_memroy' under zero_optimization.offload_optimizer; "
            "did you mean 'pin_memory'?");
}

TEST(ConfigErrors, TopLevelTypoGetsSuggestion) {
  ParseResult r = parse(R"({"train_batch_size": 8, "gradient_acumulation_steps": 2})");
  EXPECT_EQ(error_at(r, "gradient_acumulation_steps"),
            "unknown key 'gradient_acumulation_steps' at the top level; "
            "did you mean 'gradient_accumulation_steps'? (DeepSpeed would ignore it silently)");
}

TEST(ConfigErrors, KeyAtTheWrongLevelSaysWhereItBelongs) {
  ParseResult r = parse(R"({"train_batch_size": 8, "stage3_prefetch_bucket_size": 5e7,
      "zero_optimization": {"enabled": true}})");
  EXPECT_EQ(error_at(r, "stage3_prefetch_bucket_size"),
            "unknown key 'stage3_prefetch_bucket_size' at the top level; "
            "'stage3_prefetch_bucket_size' belongs under zero_optimization (DeepSpeed would "
            "ignore it silently)");
  EXPECT_THAT(error_at(r, "zero_optimization.enabled"), HasSubstr("belongs under fp16"));
}

TEST(ConfigErrors, UnknownKeyWithNothingCloseListsTheValidKeys) {
  ParseResult r = parse(R"({"train_batch_size": 8, "bf16": {"speed": "max"}})");
  EXPECT_EQ(error_at(r, "bf16.speed"),
            "unknown key 'speed' under bf16 (valid keys: enabled, check_grad_overflow, "
            "immediate_grad_update, bf16_master_weights_and_grads, bf16_optimizer_states)");
}

TEST(ConfigErrors, GateOfAnUnsupportedSectionMustBeABoolean) {
  ParseResult r = parse(R"({"train_batch_size": 8, "wandb": {"enabled": "maybe"}})");
  EXPECT_EQ(error_at(r, "wandb.enabled"), "expected a boolean (true or false), got \"maybe\"");
}

TEST(ConfigErrors, MisspelledSectionIsAnErrorNotSilentStageZero) {
  ParseResult r = parse(R"({"train_batch_size": 8, "zero_optimisation": {"stage": 3}})");
  EXPECT_EQ(error_at(r, "zero_optimisation"),
            "unknown key 'zero_optimisation' at the top level; did you mean "
            "'zero_optimization'? (DeepSpeed would ignore it silently)");
}

TEST(ConfigErrors, ChoiceTypoGetsSuggestion) {
  ParseResult r = parse(R"({"train_batch_size": 8, "optimizer": {"type": "AdamV"}})");
  EXPECT_EQ(error_at(r, "optimizer.type"),
            "must be one of Adam, AdamW, SGD; got \"AdamV\"; did you mean 'Adam'?");
}

TEST(ConfigErrors, AllProblemsAreReportedTogether) {
  ParseResult r = parse(R"({"train_batch_size": 8, "gradient_acumulation_steps": 2,
      "fp16": {"enabled": true, "loss_scale": -2}, "bf16": {"enabled": true},
      "zero_optimization": {"stage": 2, "allgather_bucket_size": 3,
        "offload_optimizer": {"pin_memroy": true, "ratio": 0.5}}})");
  EXPECT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 6u) << r.status().to_string();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  const std::string msg = r.status().message();
  EXPECT_THAT(msg, HasSubstr("invalid DeepSpeed config (6 problems):\n"));
  EXPECT_THAT(msg, HasSubstr("\n  gradient_acumulation_steps: unknown key"));
  EXPECT_THAT(msg, HasSubstr("\n  fp16.loss_scale: must be >= 0, got -2"));
  EXPECT_THAT(msg, HasSubstr("\n  zero_optimization.offload_optimizer.pin_memroy: unknown"));
  EXPECT_THAT(msg, HasSubstr("\n  bf16.enabled: fp16 and bf16 are both enabled"));
  EXPECT_THAT(msg, HasSubstr("\n  zero_optimization.offload_optimizer.ratio: DeepSpeed refuses "
                             "this too: partial offloading (ratio < 1) is only supported at "
                             "stage 3 (stage is 2)"));
  EXPECT_THAT(msg, HasSubstr("\n  zero_optimization.allgather_bucket_size: must be a multiple "
                             "of 2, got 3"));
  StatusOr<Config> s = parse_config(R"({"train_batch_size": 8, "fp16": {"hysteresis": 0}})", {});
  EXPECT_EQ(
      s.status().message(),
      "invalid DeepSpeed config (1 problem):\n  fp16.hysteresis: must be >= 1, got 0 (line 1)");
}

TEST(ConfigErrors, ErrorsCarryTheLineOfTheirKey) {
  ParseResult r = parse(
      "{\n"
      "  \"train_batch_size\": 8,\n"
      "  // a comment with \"quotes\": { [\n"
      "  /* and a block\n"
      "     comment */\n"
      "  \"zero_optimization\": {\n"
      "    \"stage\": 2,\n"
      "    \"offload_optimizer\": {\"device\": \"cpu\",\n"
      "      \"pin_memroy\": true},\n"
      "    \"stage\": 1\n"
      "  }\n"
      "}\n");
  ASSERT_EQ(r.errors.size(), 2u) << r.status().to_string();
  EXPECT_EQ(r.errors[0].path, "zero_optimization.stage");  // duplicate: its second occurrence
  EXPECT_EQ(r.errors[0].line, 10);
  EXPECT_EQ(r.errors[1].line, 9);
  EXPECT_THAT(r.errors[1].to_string(), ::testing::EndsWith("did you mean 'pin_memory'? (line 9)"));
  // A rule about a key the user did not write has no line.
  ParseResult none = parse(R"({"gradient_accumulation_steps": 2})");
  ASSERT_EQ(none.errors.size(), 1u);
  EXPECT_EQ(none.errors[0].line, 0);
}

TEST(ConfigErrors, BothFp16AndBf16IsRefused) {
  ParseResult r = parse(R"({"train_batch_size": 8, "fp16": {"enabled": true},
      "bf16": {"enabled": true}})");
  EXPECT_EQ(error_at(r, "bf16.enabled"), "fp16 and bf16 are both enabled; enable at most one");
}

TEST(ConfigErrors, OneMistakeGivesOneError) {
  // The bad stage is reported; the offload rule that depends on it is not.
  ParseResult r = parse(R"({"train_batch_size": 8, "zero_optimization": {"stage": "three",
      "offload_param": {"device": "cpu"}}})");
  ASSERT_EQ(r.errors.size(), 1u) << r.status().to_string();
  EXPECT_EQ(r.errors[0].path, "zero_optimization.stage");
}

TEST(ConfigErrors, OffloadOptimizerNeedsZero) {
  ParseResult r = parse(R"({"train_batch_size": 8,
      "zero_optimization": {"offload_optimizer": {"device": "cpu"}}})");
  EXPECT_EQ(error_at(r, "zero_optimization.offload_optimizer.device"),
            "offload_optimizer requires zero_optimization.stage 1, 2 or 3 (stage is 0)");
}

TEST(ConfigErrors, MaxGradNormInOptimizerPointsToGradientClipping) {
  ParseResult r = parse(R"({"train_batch_size": 8,
      "optimizer": {"type": "AdamW", "params": {"max_grad_norm": 1.0}}})");
  EXPECT_EQ(error_at(r, "optimizer.params.max_grad_norm"),
            "'max_grad_norm' is not an optimizer parameter; use the top-level "
            "gradient_clipping (DeepSpeed refuses it too)");
}

TEST(ConfigErrors, ParametersMustBelongToTheType) {
  ParseResult r = parse(R"({"train_batch_size": 8,
      "optimizer": {"type": "AdamW", "params": {"momentum": 0.9}},
      "scheduler": {"type": "WarmupLR", "params": {"total_num_steps": 10}}})");
  EXPECT_EQ(error_at(r, "optimizer.params.momentum"),
            "'momentum' does not apply to optimizer type AdamW (it applies to SGD)");
  EXPECT_EQ(error_at(r, "scheduler.params.total_num_steps"),
            "'total_num_steps' does not apply to scheduler type WarmupLR (it applies to "
            "WarmupDecayLR,WarmupCosineLR)");
}

TEST(ConfigErrors, RequiredPerTypeParameters) {
  ParseResult r = parse(R"({"train_batch_size": 8, "optimizer": {"params": {"lr": 1}},
      "scheduler": {"type": "WarmupCosineLR"}})");
  EXPECT_EQ(error_at(r, "optimizer.type"), "required: the optimizer section must name its type");
  EXPECT_EQ(error_at(r, "scheduler.params.total_num_steps"),
            "required for scheduler type WarmupCosineLR");
}

TEST(ConfigErrors, OptimizerContradictions) {
  ParseResult r = parse(R"({"train_batch_size": 8,
      "optimizer": {"type": "SGD", "params": {"nesterov": true, "momentum": 0}}})");
  EXPECT_EQ(error_at(r, "optimizer.params.nesterov"),
            "Nesterov momentum requires momentum > 0 and dampening 0 (momentum 0.0, "
            "dampening 0.0)");
  ParseResult a = parse(R"({"train_batch_size": 8,
      "optimizer": {"type": "AdamW", "params": {"adam_w_mode": false}}})");
  EXPECT_THAT(error_at(a, "optimizer.params.adam_w_mode"), HasSubstr("use type Adam"));
}

TEST(ConfigErrors, ReduceScatterRefusesPredivide) {
  ParseResult r = parse(R"({"train_batch_size": 8, "gradient_predivide_factor": 2,
      "zero_optimization": {"stage": 2}})");
  EXPECT_THAT(error_at(r, "gradient_predivide_factor"),
              HasSubstr("ZeRO stage 2 with reduce_scatter requires"));
}

// DeepSpeed's read_zero_config_deprecated: true is stage 1 with the top-level
// allgather_size (default 5e8) as the bucket, false is stage 0.
TEST(ConfigErrors, LegacyBooleanZeroSectionIsReadAsDeepSpeedReadsIt) {
  ParseResult on = parse(R"({"train_batch_size": 8, "zero_optimization": true,
      "allgather_size": 2e8})");
  ASSERT_TRUE(on.config) << on.status().to_string();
  EXPECT_EQ(on.config->zero.stage, 1);
  EXPECT_EQ(on.config->zero.allgather_bucket_size, 200'000'000);
  ASSERT_EQ(on.warnings.size(), 1u);
  EXPECT_EQ(on.warnings[0].to_string(),
            "zero_optimization: deprecated boolean form; DeepSpeed reads true as "
            "{\"stage\":1,\"allgather_bucket_size\":200000000.0} (and so does zerotrain); write "
            "that (line 1)");
  Config plain = testing::parse_ok(R"({"train_batch_size": 8, "zero_optimization": true})");
  EXPECT_EQ(plain.zero.allgather_bucket_size, 500'000'000);
  ParseResult off = parse(R"({"train_batch_size": 8, "zero_optimization": false,
      "allgather_size": 2e8})");
  ASSERT_TRUE(off.config) << off.status().to_string();
  EXPECT_EQ(off.config->zero.stage, 0);
  // Unread by DeepSpeed without the boolean true: ignored, with a warning.
  EXPECT_EQ(off.warnings.size(), 2u);
  ParseResult bad = parse(R"({"train_batch_size": 8, "zero_optimization": true,
      "allgather_size": 3})");
  EXPECT_THAT(error_at(bad, "zero_optimization.allgather_bucket_size"),
              HasSubstr("must be a multiple of 2, got 3"));
}

TEST(ConfigErrors, Stage3KeysBelowStage3Warn) {
  ParseResult r = parse(R"({"train_batch_size": 8,
      "zero_optimization": {"stage": 2, "stage3_max_live_parameters": 1e8}})");
  ASSERT_TRUE(r.config);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0].to_string(),
            "zero_optimization.stage3_max_live_parameters: has no effect at "
            "zero_optimization.stage 2 (stage 3 only) (line 2)");
}

}  // namespace
}  // namespace zerotrain::config
