// Kill trials: 20 seeded training jobs, `zerotrain run --num_gpus N --
// zerotrain train` (N in {2,3,4}, ZeRO stage 0-3) saving a checkpoint every
// 2 steps; once the first checkpoint exists, a seeded rank is SIGKILLed at
// a seeded moment 0.2-1.5 s later — mid-step, mid-collective or mid-save.
// Each job must end within 35 s with exit code 137, its stderr must name
// the killed rank, no worker may survive it, and the checkpoint `latest`
// names must pass `zerotrain checkpoint show` and resume: a new job at the
// same world size loads it and trains the next step.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
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
  int world_size, victim, stage;
  double delay_s;
};

Trial trial_for(int seed) {
  std::mt19937 rng(1000 + seed);
  Trial t;
  t.world_size = 2 + static_cast<int>(rng() % 3);
  t.victim = static_cast<int>(rng() % t.world_size);
  t.delay_s = 0.2 + 1.3 * std::uniform_real_distribution<double>(0, 1)(rng);
  t.stage = static_cast<int>(rng() % 4);
  return t;
}

class KillTrial : public ::testing::TestWithParam<int> {};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A small training job: gpt2-tiny, 32-token sequences, 2 a micro-batch.
std::vector<std::string> train_job(const Trial& t, const std::string& dir,
                                   const std::vector<std::string>& more) {
  const std::string cfg = dir + "/ds.json";
  std::ofstream(cfg) << R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,
      "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}, "steps_per_print": 1000,
      "zero_optimization": {"stage": )"
                     << t.stage << "}}";
  std::vector<std::string> argv{ZT_BIN, "run", "--num_gpus", std::to_string(t.world_size),
                                "--grace_period", "2", "--", ZT_BIN, "train", "--deepspeed", cfg,
                                "--seq-len", "32", "--eval-interval", "0", "--corpus-bytes",
                                "100000"};
  argv.insert(argv.end(), more.begin(), more.end());
  return argv;
}

TEST_P(KillTrial, JobEndsWith137NamingTheRankAndTheLastCheckpointResumes) {
  const Trial t = trial_for(GetParam());
  SCOPED_TRACE("N=" + std::to_string(t.world_size) + " stage " + std::to_string(t.stage) +
               " kill rank " + std::to_string(t.victim) + " after " + std::to_string(t.delay_s) +
               " s");
  char tmpl[] = "/tmp/zt_kill_trial_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, ck = dir + "/ck";
  Subprocess launcher(train_job(t, dir, {"--steps", "100000", "--save", ck, "--save-interval", "2"}),
                      {"OMP_NUM_THREADS=1"});
  std::map<int, int> workers;
  for (auto deadline = Clock::now() + 30s; Clock::now() < deadline;
       std::this_thread::sleep_for(10ms)) {
    workers = workers_by_rank(launcher.pid());
    if (static_cast<int>(workers.size()) == t.world_size) break;
  }
  ASSERT_EQ(static_cast<int>(workers.size()), t.world_size);
  for (auto deadline = Clock::now() + 60s;
       Clock::now() < deadline && !std::filesystem::exists(ck + "/latest");
       std::this_thread::sleep_for(10ms)) {
  }
  ASSERT_TRUE(std::filesystem::exists(ck + "/latest")) << "no checkpoint within 60 s";
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

  // The checkpoint latest names is whole, and a new job resumes from it.
  ProcessResult show = run_process({ZT_BIN, "checkpoint", "show", ck}, 60s);
  EXPECT_EQ(show.exit_code, 0) << show.out << show.err;
  std::string tag = read_file(ck + "/latest");
  ASSERT_EQ(tag.rfind("global_step", 0), 0u) << tag;
  const int64_t step = std::stoll(tag.substr(11));
  ProcessResult resumed =
      run_process(train_job(t, dir, {"--steps", std::to_string(step + 1), "--load", ck}), 120s,
                  {"OMP_NUM_THREADS=1"});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_NE(resumed.out.find("step " + std::to_string(step + 1) + "/"), std::string::npos)
      << resumed.out;
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Seeds, KillTrial, ::testing::Range(0, kTrials));

// The seeds cover what the trials claim to: every world size, every stage
// and, at 4 ranks, more than one victim.
TEST(KillTrialSeeds, CoverEveryWorldSizeStageAndSeveralVictims) {
  std::map<int, std::set<int>> victims;
  std::set<int> stages;
  for (int s = 0; s < kTrials; ++s) {
    Trial t = trial_for(s);
    stages.insert(t.stage);
    EXPECT_GE(t.delay_s, 0.2);
    EXPECT_LE(t.delay_s, 1.5);
    victims[t.world_size].insert(t.victim);
  }
  EXPECT_EQ(victims.size(), 3u);
  EXPECT_GE(victims[4].size(), 2u);
  EXPECT_EQ(stages.size(), 4u);
}

}  // namespace
}  // namespace zerotrain::testing
