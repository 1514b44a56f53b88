// Tests that really spawn workers through run_launcher / supervise: worker
// environments, failure propagation, signal forwarding, SIGKILL escalation,
// unrunnable programs, and the remote command line run by a real shell.
#include "launch/supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "launch/launcher.h"
#include "launch/signals.h"

namespace zerotrain::launch {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

class Spawn : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/zt_launch_spawn_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ::unsetenv("CUDA_VISIBLE_DEVICES");
  }
  void TearDown() override { ASSERT_EQ(std::system(("rm -rf '" + dir_ + "'").c_str()), 0); }

  // `script` runs under /bin/sh with $0 = the test directory.
  LaunchOptions options(int workers, const std::string& script) const {
    LaunchOptions opt;
    opt.gpu_count = 0;  // CPU host: --num_gpus N = N workers
    opt.num_gpus = workers;
    opt.grace_period_s = 0.3;
    opt.command = {"/bin/sh", "-c", script, dir_};
    return opt;
  }
  std::string read(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  bool wait_for_file(const std::string& name, double timeout_s) const {
    auto start = Clock::now();
    while (seconds_since(start) < timeout_s) {
      if (::access((dir_ + "/" + name).c_str(), F_OK) == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
  // Forks a launcher whose stderr goes to launcher.err in the test directory.
  pid_t fork_launcher(const LaunchOptions& opt) const {
    pid_t pid = ::fork();
    if (pid == 0) {
      if (std::freopen((dir_ + "/launcher.err").c_str(), "w", stderr) == nullptr) ::_exit(99);
      ::_exit(run_launcher(opt));
    }
    return pid;
  }
  int wait_exit_code(pid_t pid) const {
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
  }
  std::string dir_;
};

// True once `pid` no longer runs (gone, or a zombie awaiting its new parent).
bool process_ends(pid_t pid, double timeout_s) {
  auto start = Clock::now();
  while (seconds_since(start) < timeout_s) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    size_t paren = line.rfind(')');
    if (paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z')
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The state letter of /proc/PID/stat ('S', 'T', ...), or 0 when unreadable.
char process_state(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return 0;
  size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() ? line[paren + 2] : 0;
}

bool reaches_state(pid_t pid, bool stopped, double timeout_s) {
  auto start = Clock::now();
  while (seconds_since(start) < timeout_s) {
    if ((process_state(pid) == 'T') == stopped) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

pid_t read_pid(const std::string& path) {
  std::ifstream in(path);
  pid_t pid = -1;
  in >> pid;
  return pid;
}

TEST_F(Spawn, TwoAndFourWorkersEachGetTheirOwnEnvironment) {
  for (int n : {2, 4}) {
    ASSERT_EQ(std::system(("rm -f '" + dir_ + "'/*").c_str()), 0);
    LaunchOptions opt = options(n,
                                "echo \"$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE "
                                "$CUDA_VISIBLE_DEVICES $ZEROTRAIN_NODE_RANK $MASTER_ADDR\" > "
                                "\"$0/$RANK\"; echo \"$MASTER_PORT $ZEROTRAIN_JOB_SECRET\" > "
                                "\"$0/shared.$RANK\"");
    ASSERT_EQ(run_launcher(opt), 0);
    const std::string shared = read("shared.0");
    std::istringstream fields(shared);
    int port = 0;
    std::string secret;
    fields >> port >> secret;
    EXPECT_GT(port, 0) << shared;
    EXPECT_EQ(secret.size(), 32u) << shared;
    for (int r = 0; r < n; ++r) {
      const std::string want = std::to_string(r) + " " + std::to_string(r) + " " +
                               std::to_string(n) + " " + std::to_string(n) + " " +
                               std::to_string(r) + " 0 127.0.0.1\n";
      EXPECT_EQ(read(std::to_string(r)), want) << "rank " << r << " of " << n;
      EXPECT_EQ(read("shared." + std::to_string(r)), shared);  // one port, one secret
    }
  }
}

TEST_F(Spawn, WorkersReadEofFromStdinEvenWhenTheLaunchersHasData) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "typed\n", 6), 6);
  ::close(fds[1]);
  int saved_stdin = ::dup(STDIN_FILENO);
  ::dup2(fds[0], STDIN_FILENO);
  ::close(fds[0]);
  LaunchOptions opt = options(2,
                              "if read -r line; then echo \"got $line\"; else echo eof; fi "
                              "> \"$0/stdin.$RANK\"");
  int code = run_launcher(opt);
  ::dup2(saved_stdin, STDIN_FILENO);
  ::close(saved_stdin);
  ASSERT_EQ(code, 0);
  EXPECT_EQ(read("stdin.0"), "eof\n");
  EXPECT_EQ(read("stdin.1"), "eof\n");
}

TEST_F(Spawn, WorkerExitingThreeStopsTheOthersPromptly) {
  LaunchOptions opt = options(3, "if [ \"$RANK\" = 1 ]; then exit 3; fi; exec sleep 30");
  ::testing::internal::CaptureStderr();
  auto start = Clock::now();
  int code = run_launcher(opt);
  double elapsed = seconds_since(start);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 3);
  EXPECT_LT(elapsed, 2.0);  // SIGTERM ends `sleep` at once; no SIGKILL needed
  EXPECT_NE(err.find("zerotrain run: rank 1 (host localhost, local rank 1) exited with status 3; "
                     "stopped the other 2 workers\n"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("SIGKILL after"), std::string::npos) << err;
}

TEST_F(Spawn, WorkerKillingItselfIsNamedWithItsSignal) {
  LaunchOptions opt = options(4, "if [ \"$RANK\" = 2 ]; then kill -9 $$; fi; exec sleep 30");
  ::testing::internal::CaptureStderr();
  auto start = Clock::now();
  int code = run_launcher(opt);
  double elapsed = seconds_since(start);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 128 + 9);
  EXPECT_LT(elapsed, 2.0);
  EXPECT_NE(err.find("zerotrain run: rank 2 (host localhost, local rank 2) was killed by signal 9 "
                     "(SIGKILL); stopped the other 3 workers"),
            std::string::npos)
      << err;
}

TEST_F(Spawn, WorkerIgnoringSigtermIsKilledAfterTheGracePeriod) {
  LaunchOptions opt = options(2,
                              "if [ \"$RANK\" = 0 ]; then "
                              "  while [ ! -e \"$0/ready.1\" ]; do sleep 0.01; done; exit 5; "
                              "fi; trap '' TERM; touch \"$0/ready.1\"; "
                              "while :; do sleep 0.05; done");
  ::testing::internal::CaptureStderr();
  auto start = Clock::now();
  int code = run_launcher(opt);
  double elapsed = seconds_since(start);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 5);
  EXPECT_GE(elapsed, 0.3);
  EXPECT_LT(elapsed, 3.0);
  EXPECT_NE(err.find("rank 0 (host localhost, local rank 0) exited with status 5; stopped the "
                     "other 1 worker (SIGKILL after the 0.3 s grace period: rank 1)"),
            std::string::npos)
      << err;
}

TEST_F(Spawn, SigintToTheLauncherReachesEveryWorker) {
  const int n = 3;
  LaunchOptions opt = options(n,
                              "trap 'echo int > \"$0/got.$RANK\"; exit 0' INT; "
                              "touch \"$0/ready.$RANK\"; while :; do sleep 0.05; done");
  opt.grace_period_s = 5;  // the workers exit by themselves; no escalation expected
  pid_t launcher = ::fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) ::_exit(run_launcher(opt));
  for (int r = 0; r < n; ++r) ASSERT_TRUE(wait_for_file("ready." + std::to_string(r), 5.0));
  auto start = Clock::now();
  ASSERT_EQ(::kill(launcher, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(launcher, &status, 0), launcher);
  EXPECT_LT(seconds_since(start), 2.0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
  for (int r = 0; r < n; ++r) EXPECT_EQ(read("got." + std::to_string(r)), "int\n") << r;
}

TEST_F(Spawn, SigtermToTheLauncherEscalatesToSigkillForWorkersIgnoringIt) {
  LaunchOptions opt = options(2,
                              "trap '' TERM; touch \"$0/ready.$RANK\"; "
                              "while :; do sleep 0.05; done");
  pid_t launcher = fork_launcher(opt);
  ASSERT_GE(launcher, 0);
  for (int r = 0; r < 2; ++r) ASSERT_TRUE(wait_for_file("ready." + std::to_string(r), 5.0));
  auto start = Clock::now();
  ASSERT_EQ(::kill(launcher, SIGTERM), 0);
  EXPECT_EQ(wait_exit_code(launcher), 128 + SIGTERM);
  double elapsed = seconds_since(start);
  EXPECT_GE(elapsed, 0.3);
  EXPECT_LT(elapsed, 3.0);
  EXPECT_NE(read("launcher.err")
                .find("zerotrain run: received SIGTERM; stopped 2 workers (SIGKILL after the 0.3 "
                      "s grace period: rank 0,1)"),
            std::string::npos)
      << read("launcher.err");
}

TEST_F(Spawn, SecondSigintSkipsTheGracePeriod) {
  LaunchOptions opt = options(1,
                              "trap '' INT TERM; touch \"$0/ready.$RANK\"; "
                              "while :; do sleep 0.05; done");
  opt.grace_period_s = 60;
  pid_t launcher = fork_launcher(opt);
  ASSERT_GE(launcher, 0);
  ASSERT_TRUE(wait_for_file("ready.0", 5.0));
  auto start = Clock::now();
  ASSERT_EQ(::kill(launcher, SIGINT), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(::kill(launcher, SIGINT), 0);
  EXPECT_EQ(wait_exit_code(launcher), 128 + SIGINT);
  EXPECT_LT(seconds_since(start), 3.0);
  EXPECT_NE(
      read("launcher.err")
          .find("received SIGINT; stopped 1 worker (SIGKILL on another signal to the launcher: "
                "rank 0)"),
      std::string::npos)
      << read("launcher.err");
}

TEST_F(Spawn, StopSignalReachesTheWorkersOwnChildren) {
  LaunchOptions opt = options(2,
                              "if [ \"$RANK\" = 1 ]; then "
                              "  while [ ! -s \"$0/grandchild\" ]; do sleep 0.01; done; exit 1; "
                              "fi; sleep 30 & echo $! > \"$0/grandchild.tmp\"; "
                              "mv \"$0/grandchild.tmp\" \"$0/grandchild\"; wait");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_launcher(opt), 1);
  ::testing::internal::GetCapturedStderr();
  pid_t grandchild = read_pid(dir_ + "/grandchild");
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(process_ends(grandchild, 2.0)) << "sleep " << grandchild << " survived";
}

TEST_F(Spawn, WorkersDieWhenTheLauncherIsKilledOutright) {
  LaunchOptions opt = options(2, "echo $$ > \"$0/pid.$RANK\"; exec sleep 30");
  pid_t launcher = fork_launcher(opt);
  ASSERT_GE(launcher, 0);
  for (int r = 0; r < 2; ++r) ASSERT_TRUE(wait_for_file("pid." + std::to_string(r), 5.0));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let `exec sleep` happen
  ASSERT_EQ(::kill(launcher, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(launcher, &status, 0), launcher);
  for (int r = 0; r < 2; ++r) {
    pid_t worker = read_pid(dir_ + "/pid." + std::to_string(r));
    ASSERT_GT(worker, 0);
    EXPECT_TRUE(process_ends(worker, 2.0)) << "worker " << r << " outlived its launcher";
  }
}

TEST_F(Spawn, CtrlZStopsTheWorkersWithTheLauncherAndContinueResumesThem) {
  LaunchOptions opt = options(2, "echo $$ > \"$0/pid.$RANK\"; exec sleep 30");
  pid_t launcher = fork_launcher(opt);
  ASSERT_GE(launcher, 0);
  for (int r = 0; r < 2; ++r) ASSERT_TRUE(wait_for_file("pid." + std::to_string(r), 5.0));
  pid_t workers[2] = {read_pid(dir_ + "/pid.0"), read_pid(dir_ + "/pid.1")};
  ASSERT_EQ(::kill(launcher, SIGTSTP), 0);
  EXPECT_TRUE(reaches_state(launcher, /*stopped=*/true, 2.0));
  for (pid_t w : workers) EXPECT_TRUE(reaches_state(w, /*stopped=*/true, 2.0)) << w;
  ASSERT_EQ(::kill(launcher, SIGCONT), 0);
  EXPECT_TRUE(reaches_state(launcher, /*stopped=*/false, 2.0));
  for (pid_t w : workers) EXPECT_TRUE(reaches_state(w, /*stopped=*/false, 2.0)) << w;
  ASSERT_EQ(::kill(launcher, SIGTERM), 0);  // the job still works: it stops cleanly
  EXPECT_EQ(wait_exit_code(launcher), 128 + SIGTERM);
  EXPECT_NE(read("launcher.err").find("received SIGTERM; stopped 2 workers"), std::string::npos)
      << read("launcher.err");
}

TEST_F(Spawn, UnrunnableProgramIsAClearErrorNotAHang) {
  LaunchOptions opt = options(2, "");
  opt.command = {dir_ + "/no-such-program"};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_launcher(opt), 127);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("zerotrain run: cannot run '" + dir_ +
                     "/no-such-program': No such file or directory (rank 0, host localhost); "
                     "no other worker was running"),
            std::string::npos)
      << err;

  std::ofstream(dir_ + "/not-executable") << "#!/bin/sh\n";
  ::chmod((dir_ + "/not-executable").c_str(), 0644);
  opt.command = {dir_ + "/not-executable"};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_launcher(opt), 127);
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("Permission denied"), std::string::npos) << err;

  opt.command = {"zerotrain-no-such-program-on-path"};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_launcher(opt), 127);
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("cannot run 'zerotrain-no-such-program-on-path'"), std::string::npos) << err;
}

// The remote command line is executed by a real local shell (standing in for
// ssh): it must cd, read the secret from stdin and exec with the env.
TEST_F(Spawn, RemoteCommandLineRunsUnderAShellWithTheSecretFromStdin) {
  JobArgs args;
  args.command = {"/bin/sh", "-c",
                  "echo \"$RANK $WORLD_SIZE $CUDA_VISIBLE_DEVICES $ZEROTRAIN_JOB_SECRET "
                  "$(pwd)\" > out; read -r rest || echo eof > stdin-state",
                  "ignored"};
  args.job_secret = "feedfacefeedfacefeedfacefeedface";
  args.cwd = dir_;
  args.hostname = "here";
  StatusOr<JobPlan> plan = plan_job({{"far-away", {3}}}, args);
  ASSERT_TRUE(plan.ok());
  WorkerSpec w = plan->workers[0];
  ASSERT_EQ(w.argv[0], "ssh");
  w.argv = {"/bin/sh", "-c", w.argv[4]};
  ASSERT_EQ(supervise({w}, SupervisorOptions{0.3}), 0);
  EXPECT_EQ(read("out"), "0 1 3 feedfacefeedfacefeedfacefeedface " + dir_ + "\n");
  EXPECT_EQ(read("stdin-state"), "eof\n");  // nothing after the secret
}

TEST(SignalName, NamesCommonSignals) {
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(signal_name(SIGINT), "SIGINT");
  EXPECT_EQ(signal_name(63), "signal 63");
}

}  // namespace
}  // namespace zerotrain::launch
