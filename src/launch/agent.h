// Per-node agent mode of `zerotrain run`: the same command runs on every
// node (no ssh), each agent starting and supervising its own node's
// workers, as torchrun and DeepSpeed's `--no_ssh --node_rank` do:
//
//   zerotrain run --nnodes 2 --node_rank K --nproc_per_node 4 \
//       --master_addr HOST0 --master_port 29500 -- zerotrain train ...
//
// Node K's workers are ranks K·P .. K·P+P−1 of N·P (P = nproc_per_node);
// rank 0 (on node 0) hosts the rendezvous store. Values missing from the
// flags come from the orchestrator's environment: Kubeflow's PET_NNODES
// (an elastic "min:max" only when min = max), PET_NODE_RANK,
// PET_NPROC_PER_NODE, PET_MASTER_ADDR, PET_MASTER_PORT; SkyPilot's
// SKYPILOT_NUM_NODES, SKYPILOT_NODE_RANK, SKYPILOT_NUM_GPUS_PER_NODE and
// the first of SKYPILOT_NODE_IPS. `--no_ssh` with a hostfile takes the
// node count and this node's slots from it, the first host as master.
// Every agent of a multi-node job needs the same job secret in its
// environment (ZEROTRAIN_JOB_SECRET or ZEROTRAIN_JOB_SECRET_FILE, or
// insecure-none): agents cannot agree on a minted one.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "comm/placement.h"
#include "core/status.h"
#include "launch/resources.h"

namespace zerotrain::launch {

// What the flags said (-1 / empty: not given).
struct AgentFlags {
  int nnodes = -1, node_rank = -1, nproc_per_node = -1;
  bool no_ssh = false;
  std::string master_addr;
  int master_port = -1;
};

struct Agent {
  int nnodes = 1, node_rank = 0, nproc_per_node = 1;
  std::string master_addr;  // empty: single node (127.0.0.1)
  int master_port = -1;     // -1: single node picks a free one
  std::string source;       // where the values came from, for the start-up line
  int first_rank() const { return node_rank * nproc_per_node; }
  int world_size() const { return nnodes * nproc_per_node; }
};

// True when the flags ask for agent mode, or the environment is a Kubeflow
// or SkyPilot node (PET_NNODES, SKYPILOT_NUM_NODES).
bool agent_mode(const AgentFlags& flags, const comm::EnvLookup& env);

// The agent's values; InvalidArgument naming the flag or variable for
// missing, malformed or inconsistent ones. `hostfile` is used with no_ssh.
StatusOr<Agent> resolve_agent(const AgentFlags& flags, const comm::EnvLookup& env,
                              const std::vector<HostfileEntry>& hostfile,
                              const std::string& hostname);

}  // namespace zerotrain::launch
