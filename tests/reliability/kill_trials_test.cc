// Kill trials: 20 seeded runs of `zerotrain run --num_gpus N` (N in
// {2,3,4}) of zt_collective_worker's allreduce loop, SIGKILLing a seeded
// rank at a seeded time 0.2-1.5 s after every worker is up. Each job must
// end within 35 s with exit code 137, its stderr must name the killed rank,
// and no worker may survive it.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "integration/subprocess.h"

namespace zerotrain::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kTrials = 20;

struct Trial {
  int world_size, victim;
  double delay_s;
};

Trial trial_for(int seed) {
  std::mt19937 rng(1000 + seed);
  Trial t;
  t.world_size = 2 + static_cast<int>(rng() % 3);
  t.victim = static_cast<int>(rng() % t.world_size);
  t.delay_s = 0.2 + 1.3 * std::uniform_real_distribution<double>(0, 1)(rng);
  return t;
}

class KillTrial : public ::testing::TestWithParam<int> {};

TEST_P(KillTrial, JobEndsWith137NamingTheRankAndNoWorkerSurvives) {
  const Trial t = trial_for(GetParam());
  SCOPED_TRACE("N=" + std::to_string(t.world_size) + " kill rank " + std::to_string(t.victim) +
               " after " + std::to_string(t.delay_s) + " s");
  Subprocess launcher({ZT_BIN, "run", "--num_gpus", std::to_string(t.world_size), "--grace_period",
                       "2", "--", ZT_COLLECTIVE_WORKER, "--loop", "60"});
  std::map<int, int> workers;
  for (auto deadline = Clock::now() + 30s; Clock::now() < deadline;
       std::this_thread::sleep_for(10ms)) {
    workers = workers_by_rank(launcher.pid());
    if (static_cast<int>(workers.size()) == t.world_size) break;
  }
  ASSERT_EQ(static_cast<int>(workers.size()), t.world_size);
  std::this_thread::sleep_for(std::chrono::duration<double>(t.delay_s));
  auto killed_at = Clock::now();
  ASSERT_EQ(::kill(workers[t.victim], SIGKILL), 0);
  ProcessResult r = launcher.wait(60s);
  const double seconds = std::chrono::duration<double>(Clock::now() - killed_at).count();
  ASSERT_FALSE(r.timed_out) << r.err;
  EXPECT_LT(seconds, 35.0);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.err;
  EXPECT_NE(r.err.find("rank " + std::to_string(t.victim)), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("SIGKILL"), std::string::npos) << r.err;
  for (auto [rank, pid] : workers)
    EXPECT_FALSE(process_running(pid)) << "rank " << rank << " survived";
}

INSTANTIATE_TEST_SUITE_P(Seeds, KillTrial, ::testing::Range(0, kTrials));

// The seeds cover what the trials claim to: every world size and, at 4
// ranks, more than one victim.
TEST(KillTrialSeeds, CoverEveryWorldSizeAndSeveralVictims) {
  std::map<int, std::set<int>> victims;
  for (int s = 0; s < kTrials; ++s) {
    Trial t = trial_for(s);
    EXPECT_GE(t.delay_s, 0.2);
    EXPECT_LE(t.delay_s, 1.5);
    victims[t.world_size].insert(t.victim);
  }
  EXPECT_EQ(victims.size(), 3u);
  EXPECT_GE(victims[4].size(), 2u);
}

}  // namespace
}  // namespace zerotrain::testing
