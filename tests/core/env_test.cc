#include "core/env.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "core/log.h"

namespace zerotrain {
namespace {

TEST(Env, IntegerReadsFallBackWhenUnsetAndRejectGarbage) {
  ::unsetenv("LOCAL_RANK");
  EXPECT_EQ(env::get_int("LOCAL_RANK", 7).value(), 7);
  ::setenv("LOCAL_RANK", "3", 1);
  EXPECT_EQ(env::get_int("LOCAL_RANK", 7).value(), 3);
  ::setenv("LOCAL_RANK", "3x", 1);
  StatusOr<int64_t> bad = env::get_int("LOCAL_RANK", 7);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("LOCAL_RANK='3x'"), std::string::npos);
  ::unsetenv("LOCAL_RANK");
}

TEST(Env, DescribeHidesTheSecret) {
  ::setenv("ZEROTRAIN_JOB_SECRET", "hunter2", 1);
  std::string d = env::describe();
  EXPECT_NE(d.find("ZEROTRAIN_JOB_SECRET=<set>"), std::string::npos);
  EXPECT_EQ(d.find("hunter2"), std::string::npos);
  ::unsetenv("ZEROTRAIN_JOB_SECRET");
}

TEST(EnvDeathTest, ReadingAnUnregisteredNameIsABug) {
  EXPECT_DEATH((void)env::get("SOME_UNDECLARED_VARIABLE"), "not in the registry");
}

}  // namespace
}  // namespace zerotrain

namespace zerotrain {
namespace {

TEST(LogLevelFromEnv, NamedLevelsApplyAndGarbageIsRefusedNamingTheVariable) {
  ::setenv("ZEROTRAIN_LOG_LEVEL", "warn", 1);
  ASSERT_TRUE(log::set_level_from_env().ok());
  EXPECT_EQ(log::level(), log::Level::kWarn);
  ::setenv("ZEROTRAIN_LOG_LEVEL", "loud", 1);
  Status s = log::set_level_from_env();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("ZEROTRAIN_LOG_LEVEL='loud'"), std::string::npos);
  EXPECT_EQ(log::level(), log::Level::kWarn);
  ::unsetenv("ZEROTRAIN_LOG_LEVEL");
  log::set_level(log::Level::kInfo);
}

}  // namespace
}  // namespace zerotrain
