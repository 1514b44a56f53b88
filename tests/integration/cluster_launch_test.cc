// Workers started the ways clusters start them (issue #22), each run
// against `zerotrain run --num_gpus 2` on the same 20 steps: Debian's Open
// MPI (`mpirun.openmpi -np 2`) and MPICH (`mpiexec.mpich -n 2`), by hand
// and through `zerotrain run --launcher openmpi|mpich`, whose workers find
// their ranks in the launcher's own variables; srun's variables; and two
// per-node agents (`zerotrain run --nnodes 2 --node_rank K`, one from flags,
// one from Kubeflow's PET_* variables). Per-step losses are bitwise equal.
// Without a job secret mpirun's workers are refused by name; a worker
// killed on one agent's node ends both agents' jobs within the comm
// timeout, the survivor naming the dead rank.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "integration/subprocess.h"

namespace zerotrain::testing {
namespace {

using namespace std::chrono_literals;

// Binds `port` (0: any) on `addr` and lets it go: the port, or 0 when taken.
int try_bind(uint32_t addr, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(addr);
  a.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(a);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  return ok ? ntohs(a.sin_port) : 0;
}

int free_port() { return try_bind(INADDR_LOOPBACK, 0); }

// The "loss" fields of a --metrics file, as printed (%.9g: a float's bits).
std::vector<std::string> losses(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  static const std::regex kLoss(R"("loss": ([^,]+),)");
  std::smatch m;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, m, kLoss)) out.push_back(m[1]);
  return out;
}

// The environment every run shares: one compute thread a rank (the same
// GEMM blocking under every launcher), and what Open MPI needs as root.
std::vector<std::string> base_env(int port) {
  return {"ZEROTRAIN_JOB_SECRET=mpi-launch-test", "MASTER_PORT=" + std::to_string(port),
          "OMP_NUM_THREADS=1", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};
}

std::vector<std::string> train_args(const std::string& metrics) {
  return {ZT_BIN, "train", "--steps", "20", "--seq-len", "32", "--metrics", metrics};
}

class ClusterLaunch : public ::testing::Test {
 protected:
  // The reference run, once for the suite.
  static void SetUpTestSuite() {
    dir_ = ::testing::TempDir() + "zt_cluster_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir_);
    const std::string ref = dir_ + "/run.jsonl";
    std::vector<std::string> argv = {
        ZT_BIN, "run", "--num_gpus", "2", "--master_port", std::to_string(free_port()), "--"};
    for (const std::string& a : train_args(ref)) argv.push_back(a);
    const ProcessResult r = run_process(argv, 180s, {"OMP_NUM_THREADS=1"});
    reference_ = losses(ref);
    if (r.exit_code != 0) reference_.clear();
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  void SetUp() override {
    ASSERT_EQ(reference_.size(), 20u) << "the zerotrain run --num_gpus 2 reference failed";
  }

  void expect_same_losses(const std::vector<std::string>& launcher, const std::string& name) {
    const std::string metrics = dir_ + "/" + name + ".jsonl";
    std::vector<std::string> argv = launcher;
    for (const std::string& a : train_args(metrics)) argv.push_back(a);
    const ProcessResult r = run_process(argv, 180s, base_env(free_port()));
    ASSERT_NE(r.exit_code, 127) << argv[0]
                                << " not found: scripts/install-deps.sh installs Debian's "
                                   "openmpi-bin and mpich";
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(losses(metrics), reference_) << name;
    // Each rank names the contract it read.
    for (int rank = 0; rank < 2; ++rank)
      EXPECT_NE(r.err.find("[zerotrain rank " + std::to_string(rank) + "] info: rank " +
                           std::to_string(rank) + "/2 (local " + std::to_string(rank) + "/2)"),
                std::string::npos)
          << r.err;
  }

  static std::string dir_;
  static std::vector<std::string> reference_;
};
std::string ClusterLaunch::dir_;
std::vector<std::string> ClusterLaunch::reference_;

TEST_F(ClusterLaunch, OpenMpiMpirunMatchesZerotrainRunBitwise) {
  expect_same_losses({"mpirun.openmpi", "--oversubscribe", "-np", "2", "-x", "ZEROTRAIN_JOB_SECRET",
                      "-x", "MASTER_PORT", "-x", "OMP_NUM_THREADS"},
                     "openmpi");
}

TEST_F(ClusterLaunch, MpichMpiexecMatchesZerotrainRunBitwise) {
  // Hydra forwards the launching environment.
  expect_same_losses({"mpiexec.mpich", "-n", "2"}, "mpich");
}

// `zerotrain run --launcher openmpi|mpich --force_multi`: the launcher
// builds the MPI command line (hostfile, exports, the secret by name) and
// supervises it.
TEST_F(ClusterLaunch, ZerotrainRunThroughOpenMpiAndMpichMatchesBitwise) {
  expect_same_losses({ZT_BIN, "run", "--launcher", "openmpi", "--force_multi", "--num_gpus", "2",
                      "--launcher_args", "--oversubscribe", "--"},
                     "run_openmpi");
  expect_same_losses(
      {ZT_BIN, "run", "--launcher", "mpich", "--force_multi", "--num_gpus", "2", "--"},
      "run_mpich");
}

// A port in Slurm's rendezvous range (15000 + 4 digits of the job id) that
// is free now, as the job id that maps to it.
int free_slurm_job_id() {
  for (int p = 15000 + (::getpid() % 9000); p < 25000; ++p)
    if (try_bind(INADDR_ANY, p) != 0) return 7000000 + (p - 15000);
  return -1;
}

// The Slurm path with the variables srun sets for two tasks on one node
// (no slurmctld/slurmd here: starting Slurm's daemons does not fit the CI
// budget, so this is srun's contract, not srun itself): the workers find
// their ranks in SLURM_*, the store at the node list's first host on
// 15000 + the job id's last 4 digits.
TEST_F(ClusterLaunch, SrunsVariablesMatchZerotrainRunBitwise) {
  const int job_id = free_slurm_job_id();
  ASSERT_GT(job_id, 0);
  const std::string metrics = dir_ + "/slurm.jsonl";
  std::vector<std::unique_ptr<Subprocess>> tasks;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> env = base_env(0);
    env.erase(env.begin() + 1);  // no MASTER_PORT: Slurm's rule gives it
    env.push_back("MASTER_PORT");
    for (const std::string& kv :
         {"SLURM_PROCID=" + std::to_string(r), std::string("SLURM_NTASKS=2"),
          "SLURM_LOCALID=" + std::to_string(r), std::string("SLURM_NODEID=0"),
          std::string("SLURM_TASKS_PER_NODE=2"), std::string("SLURM_JOB_NODELIST=localhost"),
          "SLURM_JOB_ID=" + std::to_string(job_id)})
      env.push_back(kv);
    tasks.push_back(
        std::make_unique<Subprocess>(train_args(r == 0 ? metrics : dir_ + "/slurm1.jsonl"), env));
  }
  for (int r = 0; r < 2; ++r) {
    const ProcessResult res = tasks[r]->wait(180s);
    ASSERT_EQ(res.exit_code, 0) << res.err;
    EXPECT_NE(res.err.find("from Slurm: SLURM_PROCID, SLURM_NTASKS"), std::string::npos) << res.err;
  }
  EXPECT_EQ(losses(metrics), reference_);
}

// Plain mpirun-style ranks with no address and no local size (as across
// hosts): they meet through a rendezvous file, over an old run's record,
// rank 1 started first.
TEST_F(ClusterLaunch, RendezvousFileMatchesZerotrainRunBitwise) {
  const std::string file = dir_ + "/job.rdzv";
  std::ofstream(file) << "zerotrain-rdzv v1 an-old-run 2 dead-host 1\n";
  const std::string metrics = dir_ + "/rdzv.jsonl";
  std::vector<std::unique_ptr<Subprocess>> ranks;
  for (int r : {1, 0}) {
    std::vector<std::string> env = base_env(0);
    env[1] = "MASTER_PORT";  // unset: rank 0 picks a free port and publishes it
    for (const std::string& kv :
         {"OMPI_COMM_WORLD_RANK=" + std::to_string(r), std::string("OMPI_COMM_WORLD_SIZE=2"),
          std::string("ZEROTRAIN_RDZV_ID=cluster-test")})
      env.push_back(kv);
    std::vector<std::string> argv = train_args(r == 0 ? metrics : dir_ + "/rdzv1.jsonl");
    argv.push_back("--rdzv-file");
    argv.push_back(file);
    ranks.push_back(std::make_unique<Subprocess>(argv, env));
    if (r == 1) std::this_thread::sleep_for(300ms);
  }
  for (auto& p : ranks) {
    const ProcessResult res = p->wait(180s);
    ASSERT_EQ(res.exit_code, 0) << res.err;
    EXPECT_NE(res.err.find("from the rendezvous file " + file + " (job cluster-test)"),
              std::string::npos)
        << res.err;
  }
  EXPECT_EQ(losses(metrics), reference_);
}

// Two agents, as on two nodes: node 0 from flags, node 1 from what
// Kubeflow sets in its pod.
TEST_F(ClusterLaunch, PerNodeAgentsMatchZerotrainRunBitwise) {
  const int port = free_port();
  const std::string m0 = dir_ + "/agent0.jsonl", m1 = dir_ + "/agent1.jsonl";
  std::vector<std::string> a0 = {
      ZT_BIN,      "run",           "--nnodes",           "2", "--node_rank", "0", "--master_addr",
      "127.0.0.1", "--master_port", std::to_string(port), "--"};
  for (const std::string& a : train_args(m0)) a0.push_back(a);
  std::vector<std::string> a1 = {ZT_BIN, "run", "--"};
  for (const std::string& a : train_args(m1)) a1.push_back(a);
  std::vector<std::string> env1 = base_env(port);
  for (const char* kv :
       {"PET_NNODES=2", "PET_NODE_RANK=1", "PET_NPROC_PER_NODE=1", "PET_MASTER_ADDR=127.0.0.1"})
    env1.push_back(kv);
  env1.push_back("PET_MASTER_PORT=" + std::to_string(port));
  Subprocess node1(a1, env1);
  Subprocess node0(a0, base_env(port));
  const ProcessResult r0 = node0.wait(180s), r1 = node1.wait(180s);
  ASSERT_EQ(r0.exit_code, 0) << r0.err;
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  EXPECT_EQ(losses(m0), reference_);
  EXPECT_NE(r1.err.find("zerotrain run: agent for node 1 of 2 (PET_NNODES, PET_NODE_RANK, "
                        "PET_NPROC_PER_NODE, PET_MASTER_ADDR, PET_MASTER_PORT): ranks 1..1 of 2"),
            std::string::npos)
      << r1.err;
}

TEST(ClusterLaunchFailure, AWorkerKilledOnOneNodeEndsBothAgentsNamingIt) {
  const int port = free_port();
  std::vector<std::string> env = base_env(port);
  env.push_back("ZEROTRAIN_COMM_TIMEOUT=5");
  auto agent = [&](int k) {
    return std::vector<std::string>{ZT_BIN,
                                    "run",
                                    "--nnodes",
                                    "2",
                                    "--node_rank",
                                    std::to_string(k),
                                    "--master_addr",
                                    "127.0.0.1",
                                    "--master_port",
                                    std::to_string(port),
                                    "--",
                                    ZT_BIN,
                                    "train",
                                    "--steps",
                                    "100000",
                                    "--seq-len",
                                    "32"};
  };
  Subprocess node0(agent(0), env);
  Subprocess node1(agent(1), env);
  std::map<int, int> workers;
  for (auto deadline = std::chrono::steady_clock::now() + 30s;
       std::chrono::steady_clock::now() < deadline && workers.empty();
       std::this_thread::sleep_for(10ms))
    workers = workers_by_rank(node1.pid());
  ASSERT_EQ(workers.count(1), 1u) << "node 1's agent started no rank 1";
  std::this_thread::sleep_for(3s);  // past the rendezvous, into the steps
  const auto killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(workers[1], SIGKILL), 0);
  const ProcessResult r1 = node1.wait(60s), r0 = node0.wait(60s);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  ASSERT_FALSE(r0.timed_out || r1.timed_out);
  EXPECT_LT(seconds, 5 + 20.0) << "the comm timeout is 5 s";
  EXPECT_EQ(r1.exit_code, 128 + SIGKILL) << r1.err;
  EXPECT_NE(r1.err.find("rank 1 (host localhost, local rank 0) was killed by signal 9"),
            std::string::npos)
      << r1.err;
  EXPECT_NE(r0.exit_code, 0);
  EXPECT_NE(r0.err.find("peer rank 1"), std::string::npos) << r0.err;
}

// (step, loss) of a --metrics file, in file order.
std::vector<std::pair<int, std::string>> steps_and_losses(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::pair<int, std::string>> out;
  static const std::regex kLine(R"(\{"step": (\d+), "loss": ([^,]+),)");
  std::smatch m;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, m, kLine)) out.emplace_back(std::stoi(m[1]), m[2]);
  return out;
}

// --max_restarts 1: a worker killed after the first checkpoint; the
// launcher restarts both, they resume from the latest checkpoint, and
// every step's loss equals an uninterrupted run's, bit for bit.
TEST(ClusterLaunchRestart, MaxRestartsResumesTheLatestCheckpointBitExact) {
  const std::string dir = ::testing::TempDir() + "zt_restart_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  auto job = [&](const std::string& name, int restarts) {
    return std::vector<std::string>{ZT_BIN,
                                    "run",
                                    "--num_gpus",
                                    "2",
                                    "--max_restarts",
                                    std::to_string(restarts),
                                    "--",
                                    ZT_BIN,
                                    "train",
                                    "--steps",
                                    "40",
                                    "--seq-len",
                                    "32",
                                    "--save",
                                    dir + "/" + name,
                                    "--save-interval",
                                    "5",
                                    "--metrics",
                                    dir + "/" + name + ".jsonl"};
  };
  const std::vector<std::string> env = {"OMP_NUM_THREADS=1"};
  const ProcessResult ref = run_process(job("ref", 0), 180s, env);
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  const auto reference = steps_and_losses(dir + "/ref.jsonl");
  ASSERT_EQ(reference.size(), 40u);

  Subprocess launcher(job("run", 1), env);
  std::map<int, int> workers;
  for (auto deadline = std::chrono::steady_clock::now() + 60s;
       std::chrono::steady_clock::now() < deadline && !std::filesystem::exists(dir + "/run/latest");
       std::this_thread::sleep_for(5ms))
    workers = workers_by_rank(launcher.pid());
  ASSERT_TRUE(std::filesystem::exists(dir + "/run/latest")) << "no checkpoint within 60 s";
  workers = workers_by_rank(launcher.pid());
  ASSERT_EQ(workers.count(1), 1u);
  ASSERT_EQ(::kill(workers[1], SIGKILL), 0);
  const ProcessResult r = launcher.wait(180s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("zerotrain run: restarting all workers (restart 1 of 1)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("restart 1: resuming from the latest checkpoint in " + dir + "/run"),
            std::string::npos)
      << r.err;
  const auto logged = steps_and_losses(dir + "/run.jsonl");
  // The restart resumed from a checkpoint, not from step 1 (the steps
  // between that checkpoint and the kill, if any, are logged twice), and
  // the last value of every step is the uninterrupted run's.
  size_t step1 = 0;
  for (const auto& [step, loss] : logged) step1 += step == 1;
  EXPECT_EQ(step1, 1u) << "the restarted job began again at step 1";
  ASSERT_GE(logged.size(), 40u);
  std::map<int, std::string> last;
  for (const auto& [step, loss] : logged) last[step] = loss;
  ASSERT_EQ(last.size(), 40u);
  for (const auto& [step, loss] : reference) EXPECT_EQ(last[step], loss) << "step " << step;
  std::filesystem::remove_all(dir);
}

TEST(ClusterLaunchRefusal, NoJobSecretIsRefusedByName) {
  std::vector<std::string> env = base_env(free_port());
  env.erase(env.begin());                 // no ZEROTRAIN_JOB_SECRET
  env.push_back("ZEROTRAIN_JOB_SECRET");  // unset it if the caller has one
  const ProcessResult r = run_process(
      {"mpirun.openmpi", "--oversubscribe", "-np", "2", ZT_BIN, "train", "--steps", "2"}, 60s, env);
  ASSERT_NE(r.exit_code, 127) << "mpirun.openmpi not found: scripts/install-deps.sh installs it";
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE((r.out + r.err).find("no job secret for a job of 2 ranks"), std::string::npos)
      << r.out << r.err;
  EXPECT_LT(r.seconds, 30);
}

}  // namespace
}  // namespace zerotrain::testing
