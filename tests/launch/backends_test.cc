// Cluster launchers' command lines: each backend's exact argv and hostfile
// for a two-host selection, the job secret never on a command line, and
// what a backend cannot express refused by name.
#include "launch/backends.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace zerotrain::launch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::vector<NodeSlots> kTwoHosts = {{"node-a", {0, 1}}, {"node-b", {0, 1}}};

BackendArgs args() {
  BackendArgs a;
  a.command = {"zerotrain", "train", "--steps", "10"};
  a.master_addr = "node-a";
  a.master_port = 29500;
  a.job_secret = "0123456789abcdef0123456789abcdef";
  a.exports = {{"NCCL_SOCKET_IFNAME", "ib0"}};
  a.launcher_args = "--bind-to 'core' -v";
  a.hostfile_path = "/tmp/hf";
  a.cwd = "/work dir";
  a.zerotrain = "/opt/zt/zerotrain";
  return a;
}

void expect_secret_only_in_env(const BackendJob& job, const BackendArgs& a) {
  for (const std::string& word : job.launcher.argv)
    EXPECT_EQ(word.find(a.job_secret), std::string::npos) << word;
}

TEST(Backends, OpenMpi) {
  StatusOr<BackendJob> job = plan_backend(Backend::kOpenMpi, kTwoHosts, args());
  ASSERT_TRUE(job.ok()) << job.status().to_string();
  EXPECT_EQ(job->hostfile, "node-a slots=2\nnode-b slots=2\n");
  EXPECT_THAT(job->launcher.argv,
              ElementsAre("mpirun", "-n", "4", "--hostfile", "/tmp/hf", "--mca", "btl", "^openib",
                          "--bind-to", "core", "-v", "-x", "ZEROTRAIN_JOB_SECRET", "-x",
                          "MASTER_ADDR=node-a", "-x", "MASTER_PORT=29500", "-x",
                          "NCCL_SOCKET_IFNAME=ib0", "zerotrain", "train", "--steps", "10"));
  EXPECT_EQ(job->launcher.env, (std::vector<EnvVar>{{"ZEROTRAIN_JOB_SECRET", args().job_secret}}));
  expect_secret_only_in_env(*job, args());
}

// Non-uniform slots go through Hydra's host:N hostfile.
TEST(Backends, MpichAndIntelMpi) {
  const std::vector<NodeSlots> uneven = {{"node-a", {0, 1, 2}}, {"node-b", {0}}};
  StatusOr<BackendJob> job = plan_backend(Backend::kMpich, uneven, args());
  ASSERT_TRUE(job.ok()) << job.status().to_string();
  EXPECT_EQ(job->hostfile, "node-a:3\nnode-b:1\n");
  EXPECT_THAT(job->launcher.argv,
              ElementsAre("mpiexec.hydra", "-n", "4", "-f", "/tmp/hf", "--bind-to", "core", "-v",
                          "-genvlist", "ZEROTRAIN_JOB_SECRET", "-genv", "MASTER_ADDR", "node-a",
                          "-genv", "MASTER_PORT", "29500", "-genv", "NCCL_SOCKET_IFNAME", "ib0",
                          "zerotrain", "train", "--steps", "10"));
  StatusOr<BackendJob> impi = plan_backend(Backend::kImpi, uneven, args());
  ASSERT_TRUE(impi.ok());
  EXPECT_EQ(impi->launcher.argv.front(), "mpirun");
  expect_secret_only_in_env(*impi, args());
}

// Sized from the selection, --include never passed to srun (DeepSpeed's
// bug before PR #8304), the secret in the exported environment.
TEST(Backends, Slurm) {
  StatusOr<BackendJob> job = plan_backend(Backend::kSlurm, kTwoHosts, args());
  ASSERT_TRUE(job.ok()) << job.status().to_string();
  EXPECT_EQ(job->hostfile, "");
  EXPECT_THAT(
      job->launcher.argv,
      ElementsAre("srun", "-n", "4", "--nodes", "2", "--nodelist", "node-a,node-b",
                  "--ntasks-per-node", "2", "--bind-to", "core", "-v",
                  "--export=ALL,MASTER_ADDR=node-a,MASTER_PORT=29500,NCCL_SOCKET_IFNAME=ib0",
                  "zerotrain", "train", "--steps", "10"));
  expect_secret_only_in_env(*job, args());
  EXPECT_THAT(plan_backend(Backend::kSlurm, {{"a", {0, 1}}, {"b", {0}}}, args()).status().message(),
              HasSubstr("srun starts the same number of tasks on every node"));
}

// An agent per node, pdsh's %n as the node rank; the secret from a shared
// file (pdsh has no private channel).
TEST(Backends, PdshRunsAnAgentPerNode) {
  BackendArgs a = args();
  EXPECT_THAT(plan_backend(Backend::kPdsh, kTwoHosts, a).status().message(),
              HasSubstr("ZEROTRAIN_JOB_SECRET_FILE"));
  a.secret_file = "/shared/secret";
  StatusOr<BackendJob> job = plan_backend(Backend::kPdsh, kTwoHosts, a);
  ASSERT_TRUE(job.ok()) << job.status().to_string();
  EXPECT_THAT(
      job->launcher.argv,
      ElementsAre("pdsh", "-S", "-f", "1024", "-w", "node-a,node-b", "--bind-to", "core", "-v",
                  "cd '/work dir' && exec env NCCL_SOCKET_IFNAME=ib0 "
                  "ZEROTRAIN_JOB_SECRET_FILE=/shared/secret /opt/zt/zerotrain run "
                  "--nnodes 2 --node_rank %n --nproc_per_node 2 --master_addr node-a "
                  "--master_port 29500 -- zerotrain train --steps 10"));
  EXPECT_EQ(job->launcher.env, (std::vector<EnvVar>{{"PDSH_RCMD_TYPE", "ssh"}}));
  expect_secret_only_in_env(*job, a);
}

TEST(Backends, NamesAndArguments) {
  EXPECT_EQ(*parse_backend("openmpi"), Backend::kOpenMpi);
  EXPECT_THAT(parse_backend("mvapich").status().message(), HasSubstr("not one of ssh, pdsh"));
  EXPECT_THAT(*split_launcher_args(R"(-x "A B" 'c d'e  f)"), ElementsAre("-x", "A B", "c de", "f"));
  EXPECT_TRUE(split_launcher_args("").value().empty());
  EXPECT_FALSE(split_launcher_args("'open").ok());
}

TEST(Backends, SshPortReachesEveryRemoteWorker) {
  JobArgs a;
  a.command = {"prog"};
  a.job_secret = "s";
  a.hostname = "login";
  a.ssh_port = 2222;
  StatusOr<JobPlan> plan = plan_job({{"far", {0}}}, a);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(
      std::vector<std::string>(plan->workers[0].argv.begin(), plan->workers[0].argv.begin() + 6),
      ElementsAre("ssh", "-o", "BatchMode=yes", "-p", "2222", "far"));
}

}  // namespace
}  // namespace zerotrain::launch
