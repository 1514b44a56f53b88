// Per-node agent mode: where each value comes from (flags over Kubeflow's
// PET_* over SkyPilot's, the hostfile with --no_ssh), what is refused, and
// the plan of one node's workers inside a larger job.
#include "launch/agent.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "comm/env_table.h"
#include "launch/plan.h"

namespace zerotrain::launch {
namespace {

using ::testing::HasSubstr;
using Table = comm::testing::EnvTable;
const auto& lookup = comm::testing::env_table;

Agent resolved(const AgentFlags& f, const Table& env = {},
               const std::vector<HostfileEntry>& hostfile = {}) {
  StatusOr<Agent> a = resolve_agent(f, lookup(env), hostfile, "node-a");
  EXPECT_TRUE(a.ok()) << a.status().to_string();
  return a.ok() ? *a : Agent{};
}

std::string refused(const AgentFlags& f, const Table& env = {},
                    const std::vector<HostfileEntry>& hostfile = {}) {
  StatusOr<Agent> a = resolve_agent(f, lookup(env), hostfile, "node-a");
  EXPECT_FALSE(a.ok());
  return a.ok() ? "" : a.status().message();
}

TEST(Agent, FlagsAsTorchrunTakesThem) {
  const Agent a = resolved({.nnodes = 2,
                            .node_rank = 1,
                            .nproc_per_node = 4,
                            .master_addr = "10.0.0.1",
                            .master_port = 23456});
  EXPECT_EQ(a.first_rank(), 4);
  EXPECT_EQ(a.world_size(), 8);
  EXPECT_EQ(a.master_addr, "10.0.0.1");
  EXPECT_EQ(a.master_port, 23456);
  EXPECT_EQ(a.source, "--nnodes, --node_rank, --nproc_per_node, --master_addr, --master_port");
  // One node alone needs nothing else; a free port is picked later.
  const Agent one = resolved({.nnodes = 1});
  EXPECT_EQ(one.world_size(), 1);
  EXPECT_EQ(one.master_port, -1);
}

// What Kubeflow's training-operator sets in pod 1 of a 2-pod PyTorchJob.
TEST(Agent, KubeflowPetVariablesAndFlagsOverThem) {
  const Table pet = {{"PET_NNODES", "2"},          {"PET_NODE_RANK", "1"},
                     {"PET_NPROC_PER_NODE", "2"},  {"PET_MASTER_ADDR", "job-master-0"},
                     {"PET_MASTER_PORT", "23456"}, {"RANK", "1"},
                     {"WORLD_SIZE", "4"}};
  EXPECT_TRUE(agent_mode({}, lookup(pet)));
  const Agent a = resolved({}, pet);
  EXPECT_EQ(a.first_rank(), 2);
  EXPECT_EQ(a.world_size(), 4);
  EXPECT_EQ(a.master_addr, "job-master-0");
  EXPECT_EQ(a.master_port, 23456);
  EXPECT_EQ(a.nproc_per_node, 2);
  EXPECT_EQ(resolved({.nproc_per_node = 1}, pet).world_size(), 2);
  Table elastic = pet;
  elastic["PET_NNODES"] = "2:2";
  EXPECT_EQ(resolved({}, elastic).nnodes, 2);
  elastic["PET_NNODES"] = "1:4";
  EXPECT_THAT(refused({}, elastic), HasSubstr("elastic node count"));
}

TEST(Agent, SkyPilotVariables) {
  const Agent a = resolved({}, {{"SKYPILOT_NUM_NODES", "2"},
                                {"SKYPILOT_NODE_RANK", "1"},
                                {"SKYPILOT_NUM_GPUS_PER_NODE", "0"},
                                {"SKYPILOT_NODE_IPS", "10.1.0.4\n10.1.0.5"}});
  EXPECT_EQ(a.nproc_per_node, 1) << "a CPU node: one worker";
  EXPECT_EQ(a.first_rank(), 1);
  EXPECT_EQ(a.master_addr, "10.1.0.4");
  EXPECT_EQ(a.master_port, 29500);
}

// DeepSpeed's `--hostfile H --no_ssh --node_rank K`.
TEST(Agent, NoSshTakesTheHostfile) {
  const std::vector<HostfileEntry> hosts = {{"worker-0", 2}, {"worker-1", 3}};
  const Agent a = resolved({.node_rank = 1, .no_ssh = true}, {}, hosts);
  EXPECT_EQ(a.nnodes, 2);
  EXPECT_EQ(a.nproc_per_node, 3);
  EXPECT_EQ(a.first_rank(), 3);
  EXPECT_EQ(a.master_addr, "worker-0");
  EXPECT_THAT(refused({.node_rank = 0, .no_ssh = true}), HasSubstr("needs a hostfile"));
  EXPECT_THAT(refused({.no_ssh = true}, {}, hosts), HasSubstr("needs --node_rank"));
  EXPECT_THAT(refused({.node_rank = 2, .no_ssh = true}, {}, hosts), HasSubstr("past the 2 hosts"));
}

TEST(Agent, WhatAMultiNodeJobLacksIsNamed) {
  EXPECT_EQ(refused({.nnodes = 2, .master_addr = "h"}),
            "a job of 2 nodes needs this node's index: --node_rank K (or PET_NODE_RANK, "
            "SKYPILOT_NODE_RANK)");
  EXPECT_EQ(refused({.nnodes = 2, .node_rank = 0}),
            "a job of 2 nodes needs node 0's address on every node: --master_addr HOST (or "
            "PET_MASTER_ADDR, SKYPILOT_NODE_IPS)");
  EXPECT_EQ(refused({.nnodes = 2, .node_rank = 2, .master_addr = "h"}),
            "--node_rank 2 is outside 2 node(s)");
  EXPECT_THAT(refused({.nnodes = 2}, {{"PET_NODE_RANK", "x"}}),
              HasSubstr("PET_NODE_RANK=x is not an integer"));
  EXPECT_FALSE(agent_mode({}, lookup({})));
}

// Node 1 of 2 with 2 workers: ranks 2 and 3 of 4, node rank 1.
TEST(Agent, PlansThisNodesRanksOfTheWholeJob) {
  JobArgs args;
  args.command = {"./train"};
  args.job_secret = "s";
  args.hostname = "node-b";
  args.master_addr = "node-a";
  args.master_port = 29500;
  args.first_rank = 2;
  args.first_node = 1;
  args.world_size = 4;
  StatusOr<JobPlan> plan = plan_job({{"localhost", {0, 1}}}, args);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->workers.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    std::map<std::string, std::string> env;
    for (const EnvVar& v : plan->workers[i].env) env[v.name] = v.value;
    EXPECT_EQ(env["RANK"], std::to_string(2 + i));
    EXPECT_EQ(env["LOCAL_RANK"], std::to_string(i));
    EXPECT_EQ(env["WORLD_SIZE"], "4");
    EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "2");
    EXPECT_EQ(env["ZEROTRAIN_NODE_RANK"], "1");
    EXPECT_EQ(env["MASTER_ADDR"], "node-a");
  }
}

// --max_restarts: a restarted job's workers learn which restart it is.
TEST(Restart, WorkersOfARestartGetItsNumber) {
  JobArgs args;
  args.command = {"./train"};
  args.job_secret = "s";
  args.hostname = "h";
  for (int restart : {0, 2}) {
    args.restart_count = restart;
    StatusOr<JobPlan> plan = plan_job({{"localhost", {0, 1}}}, args);
    ASSERT_TRUE(plan.ok());
    for (const WorkerSpec& w : plan->workers) {
      std::string count;
      for (const EnvVar& v : w.env)
        if (v.name == "ZEROTRAIN_RESTART_COUNT") count = v.value;
      EXPECT_EQ(count, restart ? "2" : "");
    }
  }
}

}  // namespace
}  // namespace zerotrain::launch
