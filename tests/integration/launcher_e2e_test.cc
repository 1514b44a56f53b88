// `zerotrain run` end to end: workers that rendezvous over the authenticated
// store and run Gloo collectives, a worker killed with SIGKILL mid-collective,
// and Ctrl-C reaching every worker.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "integration/subprocess.h"

namespace zerotrain::testing {
namespace {

using namespace std::chrono_literals;

std::map<int, int> wait_for_workers(int launcher, int n, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  std::map<int, int> workers;
  while (std::chrono::steady_clock::now() < deadline) {
    workers = workers_by_rank(launcher);
    if (static_cast<int>(workers.size()) == n) break;
    std::this_thread::sleep_for(20ms);
  }
  return workers;
}

class CollectivesThroughZerotrainRun : public ::testing::TestWithParam<int> {};

TEST_P(CollectivesThroughZerotrainRun, EveryWorkerMatchesClosedFormsAndByteFormulas) {
  const int n = GetParam();
  ProcessResult r = run_process(
      {ZT_BIN, "run", "--num_gpus", std::to_string(n), "--", ZT_COLLECTIVE_WORKER}, 120s);
  ASSERT_FALSE(r.timed_out) << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (int rank = 0; rank < n; ++rank) {
    std::string line = "rank " + std::to_string(rank) + "/" + std::to_string(n) + " ok";
    EXPECT_NE(r.out.find(line), std::string::npos) << "missing '" << line << "' in\n" << r.out;
  }
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, CollectivesThroughZerotrainRun, ::testing::Values(2, 4));

TEST(ZerotrainRunFailures, SigkillOfOneWorkerEndsTheJobWithinBoundNamingThatRank) {
  Subprocess launcher({ZT_BIN, "run", "--num_gpus", "4", "--grace_period", "2", "--",
                       ZT_COLLECTIVE_WORKER, "--loop", "120"});
  std::map<int, int> workers = wait_for_workers(launcher.pid(), 4, 30s);
  ASSERT_EQ(workers.size(), 4u);
  std::this_thread::sleep_for(1s);  // let them get into the allreduce loop
  auto killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(workers[2], SIGKILL), 0);
  ProcessResult r = launcher.wait(60s);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  ASSERT_FALSE(r.timed_out);
  EXPECT_LT(seconds, 35.0);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.err;
  EXPECT_NE(r.err.find("rank 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("SIGKILL"), std::string::npos) << r.err;
  // Every other worker is gone too: nobody is left hanging in a collective.
  for (auto [rank, pid] : workers)
    EXPECT_FALSE(process_running(pid)) << "rank " << rank << " survived";
}

TEST(ZerotrainRunFailures, InterruptReachesEveryWorker) {
  Subprocess launcher({ZT_BIN, "run", "--num_gpus", "2", "--grace_period", "2", "--",
                       ZT_COLLECTIVE_WORKER, "--loop", "120"});
  std::map<int, int> workers = wait_for_workers(launcher.pid(), 2, 30s);
  ASSERT_EQ(workers.size(), 2u);
  ASSERT_EQ(::kill(launcher.pid(), SIGINT), 0);
  ProcessResult r = launcher.wait(30s);
  ASSERT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.seconds, 30.0);
  for (auto [rank, pid] : workers)
    EXPECT_FALSE(process_running(pid)) << "rank " << rank << " survived";
}

TEST(ZerotrainRunFailures, MissingProgramIsAClearErrorNotAHang) {
  ProcessResult r =
      run_process({ZT_BIN, "run", "--num_gpus", "2", "--", "/nonexistent/zt_program"}, 30s);
  ASSERT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("/nonexistent/zt_program"), std::string::npos) << r.err;
}

TEST(ZerotrainRunDryRun, IncludeLocalhostOneGivesTheWorkerDeviceOne) {
  ProcessResult r = run_process(
      {ZT_BIN, "run", "--dry-run", "--include", "localhost:1", "--", "train", "--steps", "3"}, 30s,
      {"CUDA_VISIBLE_DEVICES"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("CUDA_VISIBLE_DEVICES=1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("RANK=0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("WORLD_SIZE=1"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace zerotrain::testing
