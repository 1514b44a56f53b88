#include "core/status.h"

#include <gtest/gtest.h>

namespace zerotrain {
namespace {

StatusOr<int> parse_positive(int v) {
  if (v <= 0) return invalid_argument("must be positive, got " + std::to_string(v));
  return v;
}

Status doubled(int v, int* out) {
  ZT_ASSIGN_OR_RETURN(int parsed, parse_positive(v));
  *out = parsed * 2;
  return ok_status();
}

TEST(Status, AssignOrReturnPropagatesTheFirstError) {
  int out = 0;
  Status s = doubled(-3, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.to_string(), "InvalidArgument: must be positive, got -3");
  EXPECT_EQ(out, 0);
  EXPECT_TRUE(doubled(4, &out).ok());
  EXPECT_EQ(out, 8);
}

TEST(Status, WithContextKeepsTheCodeAndPrependsContext) {
  Status s = corruption("crc mismatch").with_context("shard /x/rank0.bin");
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message(), "shard /x/rank0.bin: crc mismatch");
  EXPECT_TRUE(ok_status().with_context("ignored").ok());
}

TEST(StatusDeathTest, ValueOfFailedStatusOrAborts) {
  StatusOr<int> bad = not_found("nothing");
  EXPECT_DEATH((void)bad.value(), "nothing");
}

}  // namespace
}  // namespace zerotrain
