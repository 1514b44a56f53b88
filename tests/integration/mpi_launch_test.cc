// Workers started by real MPI launchers (issue #22): Debian's Open MPI
// (`mpirun.openmpi -np 2`) and MPICH (`mpiexec.mpich -n 2`) each run
// `zerotrain train` for 20 steps; the workers find their ranks in the
// launcher's own variables, rendezvous on this host, and log per-step
// losses bitwise equal to `zerotrain run --num_gpus 2`'s. Without a job
// secret the same mpirun is refused, by name, before any rendezvous.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "integration/subprocess.h"

namespace zerotrain::testing {
namespace {

using namespace std::chrono_literals;

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    return 0;
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

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

class MpiLaunch : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "zt_mpi_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir_);
    const std::string ref = dir_ + "/run.jsonl";
    std::vector<std::string> argv = {
        ZT_BIN, "run", "--num_gpus", "2", "--master_port", std::to_string(free_port()), "--"};
    for (const std::string& a : train_args(ref)) argv.push_back(a);
    const ProcessResult r = run_process(argv, 180s, {"OMP_NUM_THREADS=1"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    reference_ = losses(ref);
    ASSERT_EQ(reference_.size(), 20u);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

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

  std::string dir_;
  std::vector<std::string> reference_;
};

TEST_F(MpiLaunch, OpenMpiMpirunMatchesZerotrainRunBitwise) {
  expect_same_losses({"mpirun.openmpi", "--oversubscribe", "-np", "2", "-x", "ZEROTRAIN_JOB_SECRET",
                      "-x", "MASTER_PORT", "-x", "OMP_NUM_THREADS"},
                     "openmpi");
}

TEST_F(MpiLaunch, MpichMpiexecMatchesZerotrainRunBitwise) {
  // Hydra forwards the launching environment.
  expect_same_losses({"mpiexec.mpich", "-n", "2"}, "mpich");
}

TEST(MpiLaunchRefusal, NoJobSecretIsRefusedByName) {
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
