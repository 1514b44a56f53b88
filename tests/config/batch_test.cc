// The batch-size triangle: all 7 given/omitted combinations, contradictions,
// and derivations DeepSpeed would floor silently.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.h"
#include "config/test_util.h"

namespace zerotrain::config {
namespace {

using testing::error_at;
using ::testing::HasSubstr;
using testing::parse;

constexpr std::nullopt_t kUnset = std::nullopt;

void expect_batch(std::optional<int64_t> tb, std::optional<int64_t> micro,
                  std::optional<int64_t> gas, int64_t ws, BatchSizes want) {
  StatusOr<BatchSizes> b = solve_batch_sizes(tb, micro, gas, ws);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(b->train_batch_size, want.train_batch_size);
  EXPECT_EQ(b->micro_batch_per_gpu, want.micro_batch_per_gpu);
  EXPECT_EQ(b->gradient_accumulation_steps, want.gradient_accumulation_steps);
  EXPECT_EQ(b->train_batch_size, b->micro_batch_per_gpu * b->gradient_accumulation_steps * ws);
}

TEST(BatchTriangle, AllThreeConsistent) { expect_batch(48, 4, 3, 4, {48, 4, 3}); }
TEST(BatchTriangle, TrainAndMicroDeriveGas) { expect_batch(48, 4, kUnset, 4, {48, 4, 3}); }
TEST(BatchTriangle, TrainAndGasDeriveMicro) { expect_batch(48, kUnset, 3, 4, {48, 4, 3}); }
TEST(BatchTriangle, MicroAndGasDeriveTrain) { expect_batch(kUnset, 4, 3, 4, {48, 4, 3}); }
TEST(BatchTriangle, TrainAloneMeansGasOne) { expect_batch(48, kUnset, kUnset, 4, {48, 12, 1}); }
TEST(BatchTriangle, MicroAloneMeansGasOne) { expect_batch(kUnset, 4, kUnset, 4, {16, 4, 1}); }

TEST(BatchTriangle, GasAloneOrNothingIsAnError) {
  for (std::optional<int64_t> gas : {std::optional<int64_t>(2), std::optional<int64_t>()}) {
    StatusOr<BatchSizes> b = solve_batch_sizes(kUnset, kUnset, gas, 4);
    ASSERT_FALSE(b.ok());
    EXPECT_THAT(b.status().message(),
                HasSubstr("either train_batch_size or train_micro_batch_size_per_gpu must be "
                          "given"));
    EXPECT_THAT(b.status().message(), HasSubstr("world_size 4"));
  }
}

TEST(BatchTriangle, ContradictionShowsTheNumbers) {
  StatusOr<BatchSizes> b = solve_batch_sizes(32, 4, 2, 2);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(),
            "train_batch_size 32 != train_micro_batch_size_per_gpu 4 × "
            "gradient_accumulation_steps 2 × world_size 2 = 16");
}

TEST(BatchTriangle, NonDivisibleDerivationIsRefusedNotFloored) {
  // DeepSpeed: micro = 10 // 4 = 2, then fails "10 != 2 * 1 * 4".
  StatusOr<BatchSizes> b = solve_batch_sizes(10, kUnset, kUnset, 4);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(),
            "cannot derive train_micro_batch_size_per_gpu: train_batch_size 10 is not "
            "divisible by gradient_accumulation_steps 1 × world_size 4 = 4 (DeepSpeed would "
            "round down; zerotrain refuses)");
  StatusOr<BatchSizes> g = solve_batch_sizes(30, 4, kUnset, 2);
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(),
              HasSubstr("cannot derive gradient_accumulation_steps: train_batch_size 30 is not "
                        "divisible by train_micro_batch_size_per_gpu 4 × world_size 2 = 8"));
}

TEST(BatchTriangle, ConfigUsesTheTrainerWorldSize) {
  TrainerArgs args;
  args.world_size = 4;
  ParseResult r = parse(R"({"train_batch_size": 64, "gradient_accumulation_steps": 2})", args);
  ASSERT_TRUE(r.config) << r.status().to_string();
  EXPECT_EQ(r.config->batch.train_micro_batch_size_per_gpu, 8);
  EXPECT_EQ(r.config->batch.world_size, 4);
  ParseResult bad = parse(R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 8,
      "gradient_accumulation_steps": 1})",
                          args);
  EXPECT_EQ(error_at(bad, "train_batch_size"),
            "train_batch_size 64 != train_micro_batch_size_per_gpu 8 × "
            "gradient_accumulation_steps 1 × world_size 4 = 32");
  ParseResult none = parse(R"({"gradient_accumulation_steps": 2})", args);
  EXPECT_THAT(error_at(none, "train_batch_size"), HasSubstr("must be given"));
}

TEST(BatchTriangle, AutoTrainBatchWithoutMicroSaysWhatToGive) {
  ParseResult r = parse(R"({"train_batch_size": "auto", "gradient_accumulation_steps": 2})");
  EXPECT_THAT(error_at(r, "train_batch_size"),
              HasSubstr("train_batch_size \"auto\" is train_micro_batch_size_per_gpu × "
                        "gradient_accumulation_steps × world_size, so give the micro batch"));
}

TEST(BatchTriangle, OverflowIsAnError) {
  StatusOr<BatchSizes> b = solve_batch_sizes(kUnset, int64_t{1} << 40, int64_t{1} << 30, 1024);
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.status().message(), HasSubstr("overflows"));
}

}  // namespace
}  // namespace zerotrain::config
