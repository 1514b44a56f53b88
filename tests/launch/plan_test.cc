// Tests for launch/plan and the dry-run path of run_launcher: ranks, worker
// environments, CUDA_VISIBLE_DEVICES per worker, ssh lines, quoting.
#include "launch/plan.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "launch/launcher.h"

namespace zerotrain::launch {
namespace {

std::map<std::string, std::string> env_map(const WorkerSpec& w) {
  std::map<std::string, std::string> m;
  for (const EnvVar& v : w.env) m[v.name] = v.value;
  return m;
}

JobArgs basic_args() {
  JobArgs a;
  a.command = {"./train", "--steps", "10"};
  a.job_secret = "0123456789abcdef0123456789abcdef";
  a.cwd = "/home/me/run dir";
  a.hostname = "login";
  return a;
}

TEST(Plan, TwoHostRanksAreHostByHostInSlotOrder) {
  std::vector<NodeSlots> nodes = {{"worker-0", {0, 1}}, {"worker-1", {1, 3, 5}}};
  StatusOr<JobPlan> plan = plan_job(nodes, basic_args());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->workers.size(), 5u);
  EXPECT_FALSE(plan->local_only);
  EXPECT_EQ(plan->master_addr, "worker-0");  // first host
  EXPECT_EQ(plan->master_port, kDefaultMasterPort);
  const int expected_local[] = {0, 1, 0, 1, 2};
  const int expected_node[] = {0, 0, 1, 1, 1};
  const int expected_device[] = {0, 1, 1, 3, 5};
  const int expected_local_world[] = {2, 2, 3, 3, 3};
  for (int r = 0; r < 5; ++r) {
    const WorkerSpec& w = plan->workers[r];
    auto env = env_map(w);
    EXPECT_EQ(w.rank, r);
    EXPECT_EQ(env["RANK"], std::to_string(r));
    EXPECT_EQ(env["LOCAL_RANK"], std::to_string(expected_local[r]));
    EXPECT_EQ(env["WORLD_SIZE"], "5");
    EXPECT_EQ(env["LOCAL_WORLD_SIZE"], std::to_string(expected_local_world[r]));
    EXPECT_EQ(env["ZEROTRAIN_NODE_RANK"], std::to_string(expected_node[r]));
    EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], std::to_string(expected_device[r]));
    EXPECT_EQ(env["MASTER_ADDR"], "worker-0");
    EXPECT_EQ(env["MASTER_PORT"], "29500");
    EXPECT_EQ(env["ZEROTRAIN_JOB_SECRET"], basic_args().job_secret);
    EXPECT_TRUE(w.remote);
  }
}

TEST(Plan, RemoteWorkerRunsThroughSshWithSecretOnStdin) {
  JobArgs args = basic_args();
  args.extra_env = {{"NCCL_DEBUG", "INFO"}, {"RANK", "99"}};  // job variables win
  StatusOr<JobPlan> plan = plan_job({{"worker-1", {2}}}, args);
  ASSERT_TRUE(plan.ok());
  const WorkerSpec& w = plan->workers[0];
  ASSERT_EQ(w.argv.size(), 5u);
  EXPECT_EQ(w.argv[0], "ssh");
  EXPECT_EQ(w.argv[1], "-o");
  EXPECT_EQ(w.argv[2], "BatchMode=yes");
  EXPECT_EQ(w.argv[3], "worker-1");
  EXPECT_EQ(w.argv[4],
            "cd '/home/me/run dir' && read -r ZEROTRAIN_JOB_SECRET && export "
            "ZEROTRAIN_JOB_SECRET && exec env NCCL_DEBUG=INFO RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 "
            "LOCAL_WORLD_SIZE=1 MASTER_ADDR=worker-1 MASTER_PORT=29500 ZEROTRAIN_NODE_RANK=0 "
            "CUDA_VISIBLE_DEVICES=2 ./train --steps 10");
  EXPECT_EQ(w.argv[4].find(args.job_secret), std::string::npos);  // never in argv
  EXPECT_EQ(w.stdin_data, args.job_secret + "\n");
  EXPECT_EQ(render_command(w), "echo " + args.job_secret + " | ssh -o BatchMode=yes worker-1 '" +
                                   "cd '\\''/home/me/run dir'\\'' && read -r " +
                                   "ZEROTRAIN_JOB_SECRET && export ZEROTRAIN_JOB_SECRET && exec " +
                                   "env NCCL_DEBUG=INFO RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 " +
                                   "LOCAL_WORLD_SIZE=1 MASTER_ADDR=worker-1 MASTER_PORT=29500 " +
                                   "ZEROTRAIN_NODE_RANK=0 CUDA_VISIBLE_DEVICES=2 ./train " +
                                   "--steps 10'");
}

TEST(Plan, LocalOnlyJobUses127AndOwnDeviceAndNoExtraEnv) {
  JobArgs args = basic_args();
  args.master_port = 40001;
  args.extra_env = {{"NCCL_DEBUG", "INFO"}};
  StatusOr<JobPlan> plan = plan_job({{"localhost", {1}}}, args);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->local_only);
  const WorkerSpec& w = plan->workers[0];
  EXPECT_FALSE(w.remote);
  EXPECT_EQ(w.argv, args.command);  // no --local_rank appended
  auto env = env_map(w);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "1");
  EXPECT_EQ(env["MASTER_ADDR"], "127.0.0.1");
  EXPECT_EQ(env["MASTER_PORT"], "40001");
  EXPECT_EQ(env.count("NCCL_DEBUG"), 0u);
  EXPECT_EQ(render_command(w),
            "env RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 "
            "MASTER_PORT=40001 ZEROTRAIN_NODE_RANK=0 CUDA_VISIBLE_DEVICES=1 "
            "ZEROTRAIN_JOB_SECRET=" +
                args.job_secret + " ./train --steps 10");
}

TEST(Plan, MixedJobUsesOurHostnameAsMasterForRemoteReach) {
  StatusOr<JobPlan> plan = plan_job({{"localhost", {0}}, {"worker-1", {0}}}, basic_args());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->master_addr, "login");
  EXPECT_FALSE(plan->workers[0].remote);
  EXPECT_TRUE(plan->workers[1].remote);
  JobArgs explicit_addr = basic_args();
  explicit_addr.master_addr = "10.0.0.1";
  EXPECT_EQ(plan_job({{"worker-1", {0}}}, explicit_addr)->master_addr, "10.0.0.1");
  JobArgs no_cmd = basic_args();
  no_cmd.command.clear();
  EXPECT_FALSE(plan_job({{"localhost", {0}}}, no_cmd).ok());
}

TEST(ShellQuote, QuotesOnlyWhatTheShellWouldInterpret) {
  EXPECT_EQ(shell_quote("abc-1.2_x/y:z=w,@%+"), "abc-1.2_x/y:z=w,@%+");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$HOME;rm *"), "'$HOME;rm *'");
}

TEST(EnvFile, ParsesKeyValueLinesAndNamesBadLines) {
  auto ok = parse_env_file("# comment\nNCCL_DEBUG=INFO\n\n PATH = /opt/bin:/usr/bin \nA=x=y\nA=z",
                           ".deepspeed_env");
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(*ok, (std::vector<EnvVar>{
                     {"NCCL_DEBUG", "INFO"}, {"PATH", "/opt/bin:/usr/bin"}, {"A", "z"}}));
  auto bad = parse_env_file("A=1\nnot a var\n", "/h/.deepspeed_env");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("/h/.deepspeed_env:2: expected KEY=VALUE"),
            std::string::npos);
  EXPECT_FALSE(parse_env_file("1X=2\n", "f").ok());
}

class DryRun : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/zt_launch_dry_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ::unsetenv("CUDA_VISIBLE_DEVICES");
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  std::string write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string dir_;
};

TEST_F(DryRun, TwoHostHostfilePrintsOneSshLinePerWorker) {
  LaunchOptions opt;
  opt.hostfile = write("hosts", "worker-a slots=2\nworker-b slots=2\n");
  opt.exclude = "worker-a:0";
  opt.command = {"prog", "x y"};
  opt.dry_run = true;
  std::ostringstream out;
  opt.out = &out;
  ASSERT_EQ(run_launcher(opt), 0);
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 3u) << out.str();
  const char* expect[][2] = {{"RANK=0 LOCAL_RANK=0 WORLD_SIZE=3 LOCAL_WORLD_SIZE=1", "worker-a"},
                             {"RANK=1 LOCAL_RANK=0 WORLD_SIZE=3 LOCAL_WORLD_SIZE=2", "worker-b"},
                             {"RANK=2 LOCAL_RANK=1 WORLD_SIZE=3 LOCAL_WORLD_SIZE=2", "worker-b"}};
  const char* devices[] = {"CUDA_VISIBLE_DEVICES=1", "CUDA_VISIBLE_DEVICES=0",
                           "CUDA_VISIBLE_DEVICES=1"};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NE(lines[i].find(std::string("| ssh -o BatchMode=yes ") + expect[i][1] + " '"),
              std::string::npos)
        << lines[i];
    EXPECT_NE(lines[i].find(expect[i][0]), std::string::npos) << lines[i];
    EXPECT_NE(lines[i].find(devices[i]), std::string::npos) << lines[i];
    EXPECT_NE(lines[i].find("MASTER_ADDR=worker-a MASTER_PORT=29500"), std::string::npos);
    EXPECT_NE(lines[i].find("prog '\\''x y'\\'''"), std::string::npos) << lines[i];
  }
}

TEST_F(DryRun, IncludeLocalhostOneGivesDeviceOneAndAFreePort) {
  LaunchOptions opt;
  opt.include = "localhost:1";
  opt.gpu_count = 2;
  opt.command = {"prog"};
  opt.dry_run = true;
  std::ostringstream out;
  opt.out = &out;
  ASSERT_EQ(run_launcher(opt), 0);
  const std::string line = out.str();
  EXPECT_EQ(line.rfind("env RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 LOCAL_WORLD_SIZE=1 "
                       "MASTER_ADDR=127.0.0.1 MASTER_PORT=",
                       0),
            0u)
      << line;
  EXPECT_NE(line.find("CUDA_VISIBLE_DEVICES=1 ZEROTRAIN_JOB_SECRET="), std::string::npos);
  EXPECT_EQ(line.find("MASTER_PORT=29500"), std::string::npos);  // a picked free port
}

TEST_F(DryRun, UserVisibleDevicesSelectAndRefuse) {
  ::setenv("CUDA_VISIBLE_DEVICES", "2,3", 1);
  LaunchOptions opt;
  opt.gpu_count = 4;
  opt.command = {"prog"};
  StatusOr<JobPlan> plan = plan_launch(opt);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->workers.size(), 2u);
  EXPECT_EQ(env_map(plan->workers[0])["CUDA_VISIBLE_DEVICES"], "2");
  EXPECT_EQ(env_map(plan->workers[1])["CUDA_VISIBLE_DEVICES"], "3");
  opt.include = "localhost:1";
  opt.dry_run = true;
  EXPECT_EQ(run_launcher(opt), 2);
  StatusOr<JobPlan> refused = plan_launch(opt);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("slot 1 on host 'localhost'"), std::string::npos);
  EXPECT_NE(refused.status().message().find("CUDA_VISIBLE_DEVICES=2,3"), std::string::npos);
  ::unsetenv("CUDA_VISIBLE_DEVICES");
}

TEST_F(DryRun, RemoteJobsExportDeepspeedEnvFromHomeThenCwdAndForwardedVars) {
  // (NCCL_*/UCX_* from the launcher's environment come before the files.)
  ASSERT_EQ(std::system(("mkdir '" + dir_ + "/home' '" + dir_ + "/work'").c_str()), 0);
  write("home/.deepspeed_env", "A=home\nB=home\n");
  write("work/.deepspeed_env", "# project settings\nB=cwd value\n");
  std::string old_home = std::getenv("HOME") ? std::getenv("HOME") : "";
  char old_cwd[4096];
  ASSERT_NE(::getcwd(old_cwd, sizeof old_cwd), nullptr);
  ::setenv("HOME", (dir_ + "/home").c_str(), 1);
  ::setenv("OMP_NUM_THREADS", "3", 1);
  ::setenv("NCCL_SOCKET_IFNAME", "ib0", 1);  // NCCL_* and UCX_*, as DeepSpeed exports them
  ::setenv("UCX_TLS", "tcp", 1);
  ASSERT_EQ(::chdir((dir_ + "/work").c_str()), 0);
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof cwd), nullptr);

  LaunchOptions opt;
  opt.hostfile = write("hosts", "far-host slots=1\n");
  opt.command = {"prog"};
  StatusOr<JobPlan> plan = plan_launch(opt);
  ::setenv("DS_ENV_FILE", write("abs_env", "C=only\n").c_str(), 1);
  StatusOr<JobPlan> plan_abs = plan_launch(opt);

  ::unsetenv("DS_ENV_FILE");
  ::unsetenv("OMP_NUM_THREADS");
  ::unsetenv("NCCL_SOCKET_IFNAME");
  ::unsetenv("UCX_TLS");
  ::setenv("HOME", old_home.c_str(), 1);
  ASSERT_EQ(::chdir(old_cwd), 0);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_TRUE(plan_abs.ok()) << plan_abs.status().to_string();
  const std::string& remote = plan->workers[0].argv.back();
  EXPECT_EQ(remote.rfind("cd " + shell_quote(cwd) + " && ", 0), 0u) << remote;
  EXPECT_NE(remote.find("exec env OMP_NUM_THREADS=3 NCCL_SOCKET_IFNAME=ib0 UCX_TLS=tcp A=home "
                        "'B=cwd value' RANK=0 "),
            std::string::npos)
      << remote;
  const std::string& remote_abs = plan_abs->workers[0].argv.back();
  EXPECT_NE(remote_abs.find("exec env OMP_NUM_THREADS=3 NCCL_SOCKET_IFNAME=ib0 UCX_TLS=tcp C=only "
                            "RANK=0 "),
            std::string::npos)
      << remote_abs;
}

TEST_F(DryRun, BadInputsExitTwoWithoutRunning) {
  LaunchOptions opt;
  opt.command = {"prog"};
  opt.hostfile = dir_ + "/missing";
  EXPECT_EQ(run_launcher(opt), 2);
  StatusOr<JobPlan> missing = plan_launch(opt);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing"), std::string::npos);
  opt.hostfile = write("bad", "a slots=1\na slots=2\n");
  EXPECT_NE(plan_launch(opt).status().message().find("/bad:2: host 'a' is listed twice"),
            std::string::npos);
  LaunchOptions no_cmd;
  EXPECT_EQ(run_launcher(no_cmd), 2);
  LaunchOptions bad_port;
  bad_port.command = {"prog"};
  bad_port.master_port = 70000;
  EXPECT_NE(plan_launch(bad_port).status().message().find("--master_port"), std::string::npos);
}

TEST(LauncherHelpers, SecretIsFreshHexAndGpuCountReadsEntries) {
  StatusOr<std::string> a = make_job_secret(), b = make_job_secret();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 32u);
  EXPECT_EQ(a->find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(count_gpus("/nonexistent/gpus"), 0);
  char tmpl[] = "/tmp/zt_gpus_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  ASSERT_EQ(std::system(("mkdir '" + dir + "/0000:3b:00.0' '" + dir + "/0000:5e:00.0'").c_str()),
            0);
  EXPECT_EQ(count_gpus(dir), 2);
  ASSERT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
  StatusOr<int> port = pick_free_port();
  ASSERT_TRUE(port.ok());
  EXPECT_GT(*port, 0);
  EXPECT_LT(*port, 65536);
}

}  // namespace
}  // namespace zerotrain::launch
