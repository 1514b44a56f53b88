// Rank discovery, rendezvous and the job secret from environment tables:
// each launcher's contract as it really sets it (clusters.md §2: Open MPI
// 4.1.4 and MPICH 4.0.2 runs, srun's and torchrun's variables), the
// precedence between them, and every partial or contradictory table
// refused with the variables named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>

#include "comm/env_table.h"
#include "comm/job_env.h"

namespace zerotrain::comm {
namespace {

using ::testing::HasSubstr;
using Table = testing::EnvTable;
const auto& lookup = testing::env_table;

Placement placed(const Table& t) {
  StatusOr<Placement> p = discover_placement(lookup(t));
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return p.ok() ? *p : Placement{};
}

std::string refused(const Table& t) {
  StatusOr<Placement> p = discover_placement(lookup(t));
  EXPECT_FALSE(p.ok()) << p->describe();
  return p.ok() ? "" : p.status().message();
}

TEST(Placement, NothingSetIsRankZeroOfOne) {
  const Placement p = placed({});
  EXPECT_EQ(p.rank, 0);
  EXPECT_EQ(p.world_size, 1);
  EXPECT_EQ(p.contract, "none");
  EXPECT_FALSE(p.external);
}

TEST(Placement, ZerotrainAndTorchrunVariables) {
  const Placement p = placed({{"RANK", "3"},
                              {"WORLD_SIZE", "8"},
                              {"LOCAL_RANK", "1"},
                              {"LOCAL_WORLD_SIZE", "2"},
                              {"ZEROTRAIN_NODE_RANK", "1"}});
  EXPECT_EQ(p.rank, 3);
  EXPECT_EQ(p.world_size, 8);
  EXPECT_EQ(p.local_rank, 1);
  EXPECT_EQ(p.local_world_size, 2);
  EXPECT_EQ(p.node_rank, 1);
  EXPECT_FALSE(p.external);
  EXPECT_EQ(p.describe(),
            "rank 3/8 (local 1/2, node 1) from zerotrain run/torchrun: RANK, WORLD_SIZE, "
            "LOCAL_RANK, LOCAL_WORLD_SIZE, ZEROTRAIN_NODE_RANK");
  // DeepSpeed's launch.py says LOCAL_SIZE; torchrun's node is GROUP_RANK.
  const Placement d = placed({{"RANK", "1"},
                              {"WORLD_SIZE", "2"},
                              {"LOCAL_RANK", "1"},
                              {"LOCAL_SIZE", "2"},
                              {"GROUP_RANK", "0"}});
  EXPECT_EQ(d.local_world_size, 2);
  EXPECT_EQ(d.node_rank, 0);
}

// `srun torchrun`: the per-node agent's numbering wins over the step's.
TEST(Placement, AnAgentInsideSrunWinsOverSlurmsVariables) {
  const Placement p = placed({{"RANK", "5"},
                              {"WORLD_SIZE", "8"},
                              {"LOCAL_RANK", "1"},
                              {"SLURM_PROCID", "1"},
                              {"SLURM_NTASKS", "2"},
                              {"SLURM_LOCALID", "0"}});
  EXPECT_EQ(p.rank, 5);
  EXPECT_EQ(p.world_size, 8);
  EXPECT_EQ(p.contract, "zerotrain run/torchrun");
}

// What mpirun (Open MPI 4.1.4) set for rank 1 of 2 on one host.
TEST(Placement, OpenMpi) {
  const Placement p = placed({{"OMPI_COMM_WORLD_RANK", "1"},
                              {"OMPI_COMM_WORLD_SIZE", "2"},
                              {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                              {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                              {"PMIX_RANK", "1"}});
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(p.world_size, 2);
  EXPECT_EQ(p.local_world_size, 2);
  EXPECT_TRUE(p.external);
  EXPECT_EQ(p.contract, "Open MPI");
}

// What mpiexec (MPICH 4.0.2, Hydra) set.
TEST(Placement, MpichHydra) {
  const Placement p = placed({{"PMI_RANK", "0"},
                              {"PMI_SIZE", "2"},
                              {"MPI_LOCALRANKID", "0"},
                              {"MPI_LOCALNRANKS", "2"},
                              {"PMI_FD", "5"}});
  EXPECT_EQ(p.world_size, 2);
  EXPECT_EQ(p.local_rank, 0);
  EXPECT_EQ(p.contract, "MPICH/Intel MPI (PMI)");
}

TEST(Placement, MvapichFluxAndJsrun) {
  EXPECT_EQ(placed({{"MV2_COMM_WORLD_RANK", "2"}, {"MV2_COMM_WORLD_SIZE", "4"}}).contract,
            "MVAPICH2");
  const Placement f =
      placed({{"FLUX_TASK_RANK", "3"}, {"FLUX_JOB_SIZE", "4"}, {"FLUX_TASK_LOCAL_ID", "1"}});
  EXPECT_EQ(f.rank, 3);
  EXPECT_EQ(f.local_rank, 1);
  EXPECT_FALSE(f.local_world_size.has_value());
  EXPECT_EQ(placed({{"JSM_NAMESPACE_RANK", "0"}, {"JSM_NAMESPACE_SIZE", "6"}}).world_size, 6);
}

// srun -n 8 over 4 nodes as 2(x3),2: task 5 is on node 2, which has 2 tasks.
TEST(Placement, SlurmWithCompressedTaskCounts) {
  const Placement p = placed({{"SLURM_PROCID", "5"},
                              {"SLURM_NTASKS", "8"},
                              {"SLURM_LOCALID", "1"},
                              {"SLURM_NODEID", "2"},
                              {"SLURM_TASKS_PER_NODE", "2(x3),2"}});
  EXPECT_EQ(p.rank, 5);
  EXPECT_EQ(p.world_size, 8);
  EXPECT_EQ(p.local_rank, 1);
  EXPECT_EQ(p.local_world_size, 2);
  EXPECT_EQ(p.node_rank, 2);
  EXPECT_EQ(p.contract, "Slurm");
  EXPECT_THAT(refused({{"SLURM_PROCID", "5"},
                       {"SLURM_NTASKS", "8"},
                       {"SLURM_NODEID", "9"},
                       {"SLURM_TASKS_PER_NODE", "2(x4)"}}),
              HasSubstr("SLURM_NODEID=9 is past the 4 nodes"));
}

// srun --mpi=pmix starting an Open MPI program sets both, agreeing; mpirun
// inside an allocation leaves the enclosing step's SLURM_* behind.
TEST(Placement, MpiOverridesAnEnclosingSlurmStep) {
  const Table ompi = {{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}};
  Table agree = ompi;
  agree.insert({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}, {"SLURM_NODEID", "1"}});
  const Placement a = placed(agree);
  EXPECT_EQ(a.contract, "Open MPI");
  EXPECT_EQ(a.node_rank, 1);
  Table enclosing = ompi;
  enclosing.insert({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}});
  const Placement e = placed(enclosing);
  EXPECT_EQ(e.rank, 3);
  EXPECT_THAT(e.source, HasSubstr("SLURM_PROCID=0, SLURM_NTASKS=1 describe the enclosing Slurm "
                                  "step: not used"));
}

TEST(Placement, TwoMpiContractsThatDisagreeAreRefused) {
  EXPECT_EQ(refused({{"OMPI_COMM_WORLD_RANK", "1"},
                     {"OMPI_COMM_WORLD_SIZE", "2"},
                     {"PMI_RANK", "0"},
                     {"PMI_SIZE", "2"}}),
            "two launchers disagree about this process: Open MPI says rank 1/2 "
            "(OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE), MPICH/Intel MPI (PMI) says 0/2 "
            "(PMI_RANK, PMI_SIZE)");
}

TEST(Placement, PartialContractsAreRefusedNamingTheVariables) {
  EXPECT_EQ(refused({{"OMPI_COMM_WORLD_RANK", "1"}}),
            "Open MPI: OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not, so the "
            "world size is unknown; set OMPI_COMM_WORLD_SIZE (or RANK and WORLD_SIZE)");
  EXPECT_EQ(refused({{"PMI_SIZE", "4"}}),
            "MPICH/Intel MPI (PMI): PMI_SIZE=4 says 4 processes but PMI_RANK is not set, so "
            "this process's rank is unknown");
  EXPECT_THAT(refused({{"WORLD_SIZE", "2"}}), HasSubstr("RANK is not set"));
  EXPECT_THAT(refused({{"RANK", "1"}}), HasSubstr("WORLD_SIZE is not"));
  EXPECT_THAT(refused({{"PMIX_RANK", "1"}}), HasSubstr("PMIx puts no world size"));
  EXPECT_THAT(refused({{"PALS_RANKID", "1"}}), HasSubstr("export RANK=$PALS_RANKID"));
  EXPECT_THAT(refused({{"SKYPILOT_NUM_NODES", "2"}, {"SKYPILOT_NODE_RANK", "1"}}),
              HasSubstr("per-node launcher"));
  EXPECT_THAT(refused({{"PET_NPROC_PER_NODE", "4"}, {"RANK", "1"}, {"WORLD_SIZE", "8"}}),
              HasSubstr("RANK there counts pods"));
  // A size of 1 alone says nothing (a batch script's SLURM_NTASKS=1).
  EXPECT_EQ(placed({{"SLURM_NTASKS", "1"}}).world_size, 1);
  // One process a pod: Kubeflow's RANK is the process's.
  EXPECT_EQ(placed({{"PET_NPROC_PER_NODE", "1"}, {"RANK", "1"}, {"WORLD_SIZE", "2"}}).rank, 1);
}

TEST(Placement, BadNumbersAreRefusedNamingTheVariable) {
  EXPECT_EQ(refused({{"OMPI_COMM_WORLD_RANK", "x"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
            "OMPI_COMM_WORLD_RANK=x is not an integer >= 0");
  EXPECT_EQ(refused({{"RANK", "0"}, {"WORLD_SIZE", "0"}}), "WORLD_SIZE=0 is not an integer >= 1");
  EXPECT_THAT(refused({{"RANK", "2"}, {"WORLD_SIZE", "2"}}),
              HasSubstr("rank 2 is outside world size 2"));
  EXPECT_THAT(
      refused({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "3"}, {"LOCAL_WORLD_SIZE", "2"}}),
      HasSubstr("local rank 3 is outside local size 2"));
}

JobEnv joined(Table t) {
  if (!t.count("ZEROTRAIN_JOB_SECRET")) t["ZEROTRAIN_JOB_SECRET"] = "s3cret";
  StatusOr<JobEnv> j = job_from_env(lookup(t));
  EXPECT_TRUE(j.ok()) << j.status().to_string();
  return j.ok() ? *j : JobEnv{};
}

std::string join_refused(const Table& t) {
  StatusOr<JobEnv> j = job_from_env(lookup(t));
  EXPECT_FALSE(j.ok());
  return j.ok() ? "" : j.status().message();
}

// Lightning's rule, the reference's example: job 123456 on gpu[01-03,07]
// rendezvouses at gpu01:18456.
TEST(Rendezvous, SlurmNodeListAndJobId) {
  const JobEnv j = joined({{"SLURM_PROCID", "2"},
                           {"SLURM_NTASKS", "4"},
                           {"SLURM_JOB_NODELIST", "gpu[01-03,07]"},
                           {"SLURM_JOB_ID", "123456"}});
  EXPECT_EQ(j.options.master_addr, "gpu01");
  EXPECT_EQ(j.options.master_port, 18456);
  EXPECT_EQ(j.options.rank, 2);
  EXPECT_EQ(j.options.world_size, 4);
  EXPECT_EQ(j.rendezvous,
            "gpu01:18456 from the first host of the Slurm node list, SLURM_JOB_ID (15000 + its "
            "last 4 digits)");
}

TEST(Rendezvous, ExplicitAddressesWinInOrder) {
  const Table slurm = {{"SLURM_PROCID", "0"},
                       {"SLURM_NTASKS", "2"},
                       {"SLURM_JOB_NODELIST", "n[1-2]"},
                       {"SLURM_JOB_ID", "7"}};
  Table t = slurm;
  t.insert({{"MASTER_ADDR", "10.0.0.7"}, {"MASTER_PORT", "29511"}});
  EXPECT_EQ(joined(t).options.master_addr, "10.0.0.7");
  EXPECT_EQ(joined(t).options.master_port, 29511);
  t = slurm;
  t.insert({{"PET_MASTER_ADDR", "job-master-0"}, {"PET_MASTER_PORT", "23456"}});
  EXPECT_EQ(joined(t).options.master_addr, "job-master-0");
  EXPECT_EQ(joined(t).options.master_port, 23456);
  EXPECT_EQ(joined(slurm).options.master_port, 15007);
  const JobEnv sky =
      joined({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"SKYPILOT_NODE_IPS", "10.1.0.4\n10.1.0.5\n"}});
  EXPECT_EQ(sky.options.master_addr, "10.1.0.4");
  EXPECT_EQ(sky.options.master_port, 29500);
}

TEST(Rendezvous, LoopbackOnlyWhenEveryRankIsOnThisHost) {
  const JobEnv local = joined({{"OMPI_COMM_WORLD_RANK", "1"},
                               {"OMPI_COMM_WORLD_SIZE", "2"},
                               {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(local.options.master_addr, "127.0.0.1");
  EXPECT_EQ(join_refused({{"OMPI_COMM_WORLD_RANK", "1"},
                          {"OMPI_COMM_WORLD_SIZE", "4"},
                          {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                          {"ZEROTRAIN_JOB_SECRET", "s"}}),
            "no rendezvous address for rank 1 of 4: tried MASTER_ADDR, PET_MASTER_ADDR, "
            "SLURM_JOB_NODELIST, SKYPILOT_NODE_IPS, a rendezvous file (ZEROTRAIN_RDZV_FILE), and "
            "loopback (not every rank is known to be on this host); set MASTER_ADDR to rank 0's "
            "host (mpirun -x MASTER_ADDR=HOST) or give a rendezvous file on a shared file system");
  EXPECT_THAT(join_refused({{"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}}),
              HasSubstr("MASTER_PORT=70000 is not a TCP port"));
}

TEST(JobSecret, AMultiRankJobWithoutOneIsRefused) {
  const Table two = {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}};
  EXPECT_THAT(join_refused(two), HasSubstr("no job secret for a job of 2 ranks"));
  Table open = two;
  open["ZEROTRAIN_JOB_SECRET"] = "insecure-none";
  const JobEnv j = joined(open);
  EXPECT_EQ(j.options.secret, "");
  ASSERT_EQ(j.warnings.size(), 1u);
  EXPECT_THAT(j.warnings[0], HasSubstr("accepts any client"));
  // One rank needs none.
  StatusOr<JobEnv> alone = job_from_env(lookup({}));
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(alone->options.world_size, 1);
}

TEST(JobSecret, FromAFileOnlyThisUserCanRead) {
  const std::string path = ::testing::TempDir() + "zt_secret_" + std::to_string(::getpid());
  std::ofstream(path) << "from-file\n";
  Table t = {{"RANK", "0"},
             {"WORLD_SIZE", "2"},
             {"MASTER_ADDR", "h"},
             {"ZEROTRAIN_JOB_SECRET_FILE", path}};
  ::chmod(path.c_str(), 0600);
  StatusOr<JobEnv> j = job_from_env(lookup(t));
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  EXPECT_EQ(j->options.secret, "from-file");
  ::chmod(path.c_str(), 0644);
  EXPECT_EQ(join_refused(t), "ZEROTRAIN_JOB_SECRET_FILE=" + path +
                                 " has mode 644: others may read it; chmod 600 it");
  t["ZEROTRAIN_JOB_SECRET"] = "x";
  EXPECT_THAT(join_refused(t), HasSubstr("keep one"));
  t.erase("ZEROTRAIN_JOB_SECRET");
  t["ZEROTRAIN_JOB_SECRET_FILE"] = path + ".missing";
  EXPECT_THAT(join_refused(t), HasSubstr("No such file"));
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace zerotrain::comm
