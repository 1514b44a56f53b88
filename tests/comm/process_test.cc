// Real multi-process runs of zt_collective_worker (spawned with the
// launcher's environment variables), and a SIGKILLed rank making the
// survivors fail within the comm timeout instead of hanging.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "comm/store/tcp_store.h"

extern char** environ;

namespace zerotrain::comm {
namespace {

using Clock = std::chrono::steady_clock;

struct Child {
  pid_t pid = -1;
  std::string out_path, err_path;
  int exit_code = -1;  // -1 while running; 128+signal if killed
  double exit_seconds = 0;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int free_port() {
  auto probe = std::move(TcpStoreServer::start({"127.0.0.1", 0, ""})).value();
  return probe->port();
}

std::vector<Child> spawn_workers(int n, const std::vector<std::string>& args,
                                 const std::string& timeout_s) {
  int port = free_port();
  std::vector<Child> children(n);
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) env.emplace_back(*e);
    env.push_back("RANK=" + std::to_string(r));
    env.push_back("WORLD_SIZE=" + std::to_string(n));
    env.push_back("MASTER_ADDR=127.0.0.1");
    env.push_back("MASTER_PORT=" + std::to_string(port));
    env.push_back("ZEROTRAIN_JOB_SECRET=process-test-secret");
    env.push_back("ZEROTRAIN_COMM_TIMEOUT=" + timeout_s);
    std::vector<char*> envp, argv;
    for (auto& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string prog = ZT_COLLECTIVE_WORKER_PATH;
    std::vector<std::string> argstore = {prog};
    argstore.insert(argstore.end(), args.begin(), args.end());
    for (auto& s : argstore) argv.push_back(s.data());
    argv.push_back(nullptr);
    Child& c = children[r];
    std::string base = ::testing::TempDir() + "zt_worker_" + std::to_string(::getpid()) + "_" +
                       std::to_string(port) + "_" + std::to_string(r);
    c.out_path = base + ".out";
    c.err_path = base + ".err";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, c.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&fa, 2, c.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    int rc = posix_spawn(&c.pid, prog.c_str(), &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    EXPECT_EQ(rc, 0) << "spawn " << prog;
  }
  return children;
}

// Reaps children until all exited or `limit` passed; stragglers are
// SIGKILLed so a broken build can never hang the suite.
void reap(std::vector<Child>& children, std::chrono::seconds limit, Clock::time_point t0) {
  auto deadline = Clock::now() + limit;
  for (;;) {
    bool running = false;
    for (Child& c : children) {
      if (c.exit_code != -1 || c.pid <= 0) continue;
      int status = 0;
      if (::waitpid(c.pid, &status, WNOHANG) == c.pid) {
        c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        c.exit_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      } else {
        running = true;
      }
    }
    if (!running) return;
    if (Clock::now() > deadline) {
      for (Child& c : children)
        if (c.exit_code == -1) ::kill(c.pid, SIGKILL);
      limit = std::chrono::seconds(5);
      deadline = Clock::now() + limit;
      ADD_FAILURE() << "workers still running at the deadline; killed";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void remove_files(const std::vector<Child>& children) {
  for (const Child& c : children) {
    std::remove(c.out_path.c_str());
    std::remove(c.err_path.c_str());
  }
}

void run_worker_job(int n) {
  auto t0 = Clock::now();
  std::vector<Child> children = spawn_workers(n, {}, "20");
  reap(children, std::chrono::seconds(60), t0);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(children[r].exit_code, 0) << "rank " << r << " stderr:\n"
                                        << slurp(children[r].err_path);
    std::string out = slurp(children[r].out_path);
    EXPECT_NE(out.find("rank " + std::to_string(r) + "/" + std::to_string(n) + " ok"),
              std::string::npos)
        << out;
  }
  if (!::testing::Test::HasFailure()) remove_files(children);
}

TEST(CollectiveWorker, TwoProcessesPassEveryCheck) { run_worker_job(2); }
TEST(CollectiveWorker, FourProcessesPassEveryCheck) { run_worker_job(4); }

// Kills `victim` mid-allreduce; every survivor must exit 1 within the 3 s
// comm timeout (plus start-up slack) with an error naming the operation.
void kill_one_rank(int n, int victim) {
  auto t0 = Clock::now();
  std::vector<Child> children = spawn_workers(n, {"--loop", "30"}, "3");
  // Wait until every rank has completed at least one allreduce.
  auto ready_deadline = Clock::now() + std::chrono::seconds(20);
  for (const Child& c : children)
    while (slurp(c.out_path).find("ready") == std::string::npos && Clock::now() < ready_deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(::kill(children[victim].pid, SIGKILL), 0);
  double killed_at = std::chrono::duration<double>(Clock::now() - t0).count();
  reap(children, std::chrono::seconds(15), t0);
  EXPECT_EQ(children[victim].exit_code, 128 + SIGKILL);
  for (int r = 0; r < n; ++r) {
    if (r == victim) continue;
    std::string err = slurp(children[r].err_path);
    EXPECT_EQ(children[r].exit_code, 1) << "rank " << r << ":\n" << err;
    EXPECT_LT(children[r].exit_seconds - killed_at, 3.0 + 2.0) << "rank " << r << " exited late";
    EXPECT_NE(err.find("allreduce of 262144 bytes (65536 x fp32)"), std::string::npos) << err;
    EXPECT_NE(err.find("on rank " + std::to_string(r)), std::string::npos) << err;
  }
  // The victim's right-hand ring neighbour names it.
  std::string right_err = slurp(children[(victim + 1) % n].err_path);
  EXPECT_NE(right_err.find("peer rank " + std::to_string(victim) + " closed the connection"),
            std::string::npos)
      << right_err;
  remove_files(children);
}

TEST(CollectiveWorker, KilledRankMakesSurvivorsFailWithinTimeout) { kill_one_rank(3, 1); }
TEST(CollectiveWorker, KilledStoreHostRankZeroStopsTheOthersToo) { kill_one_rank(4, 0); }

}  // namespace
}  // namespace zerotrain::comm
