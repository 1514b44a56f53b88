// File rendezvous: the record round-trips; a waiting rank ignores an old
// run's record until rank 0 replaces it; the wait ends with an error naming
// the file and what it held; a job without an id is refused.
#include "comm/rdzv_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <thread>

#include "comm/env_table.h"
#include "comm/job_env.h"

namespace zerotrain::comm {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

std::string temp_path(const char* name) {
  return ::testing::TempDir() + "zt_" + name + "_" + std::to_string(::getpid());
}

TEST(RdzvFile, RecordRoundTripsAndJunkIsRefused) {
  const RdzvRecord r{"job7", 4, "node-a", 29511};
  StatusOr<RdzvRecord> back = parse_rdzv_record(format_rdzv_record(r));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->job_id, "job7");
  EXPECT_EQ(back->world_size, 4);
  EXPECT_EQ(back->host, "node-a");
  EXPECT_EQ(back->port, 29511);
  for (const char* junk : {"", "zerotrain-rdzv v2 j 2 h 1", "zerotrain-rdzv v1 j 0 h 1",
                           "zerotrain-rdzv v1 j 2 h 70000", "hello"})
    EXPECT_FALSE(parse_rdzv_record(junk).ok()) << junk;
  EXPECT_FALSE(publish_rdzv(temp_path("bad_id"), {"a b", 2, "h", 1}).ok());
}

TEST(RdzvFile, AWaitingRankIgnoresAnOldRunsRecordUntilRankZeroReplacesIt) {
  const std::string path = temp_path("rdzv_wait");
  ASSERT_TRUE(publish_rdzv(path, {"old-job", 2, "dead-host", 1}).ok());
  std::thread rank0([&] {
    std::this_thread::sleep_for(300ms);
    ASSERT_TRUE(publish_rdzv(path, {"new-job", 2, "node-a", 29511}).ok());
  });
  const auto t0 = std::chrono::steady_clock::now();
  StatusOr<RdzvRecord> r = await_rdzv(path, "new-job", 2, 10s);
  rank0.join();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->host, "node-a");
  EXPECT_EQ(r->port, 29511);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 250ms);
  ::unlink(path.c_str());
}

TEST(RdzvFile, TheWaitEndsNamingTheFileAndWhatItHeld) {
  const std::string path = temp_path("rdzv_timeout");
  ASSERT_TRUE(publish_rdzv(path, {"old-job", 2, "h", 1}).ok());
  StatusOr<RdzvRecord> r = await_rdzv(path, "job9", 2, 300ms);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTimeout);
  EXPECT_EQ(r.status().message(),
            "rendezvous file " + path +
                ": no record from rank 0 of job job9 (2 ranks) within 300 ms; it holds job "
                "old-job of 2 ranks. Is rank 0 running, and does every rank see this path?");
  ::unlink(path.c_str());
}

TEST(RdzvFile, JoiningThroughAFileNeedsAJobIdAndRankZeroPublishes) {
  const std::string path = temp_path("rdzv_join");
  testing::EnvTable t = {{"OMPI_COMM_WORLD_RANK", "0"},
                         {"OMPI_COMM_WORLD_SIZE", "2"},
                         {"ZEROTRAIN_JOB_SECRET", "s"},
                         {"ZEROTRAIN_RDZV_FILE", path}};
  StatusOr<JobEnv> refused = job_from_env(testing::env_table(t));
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("needs a job id"));
  t["SLURM_JOB_ID"] = "4242";
  StatusOr<JobEnv> j = job_from_env(testing::env_table(t));
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  StatusOr<RdzvRecord> r = parse_rdzv_record(text);
  ASSERT_TRUE(r.ok()) << text;
  EXPECT_EQ(r->job_id, "4242");
  EXPECT_EQ(r->port, j->options.master_port);
  EXPECT_EQ(r->host, j->options.master_addr);
  EXPECT_EQ(text.find("s\n"), std::string::npos) << "the secret never goes in the file";
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace zerotrain::comm
