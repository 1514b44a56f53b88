// Per-node agent mode (see agent.h).
#include "launch/agent.h"

#include <sstream>

namespace zerotrain::launch {
namespace {

using comm::env_int;

// PET_NNODES: "N", or torchrun's elastic "MIN:MAX" (fixed only).
StatusOr<std::optional<int>> pet_nnodes(const comm::EnvLookup& env) {
  std::optional<std::string> v = env("PET_NNODES");
  if (!v) return std::optional<int>();
  const size_t colon = v->find(':');
  if (colon != std::string::npos) {
    if (v->substr(0, colon) != v->substr(colon + 1))
      return invalid_argument("PET_NNODES=" + *v +
                              " asks for an elastic node count; zerotrain runs a fixed number "
                              "of nodes (set min = max)");
    v = v->substr(0, colon);
  }
  return env_int([&](std::string_view) { return v; }, "PET_NNODES", 1);
}

// The first value given: a flag (>= 0), then each variable in turn.
template <typename T>
void take(T& field, bool& have, std::string& source, const T& value, bool given,
          const std::string& from) {
  if (have || !given) return;
  field = value;
  have = true;
  source += (source.empty() ? "" : ", ") + from;
}

}  // namespace

bool agent_mode(const AgentFlags& f, const comm::EnvLookup& env) {
  return f.nnodes >= 0 || f.node_rank >= 0 || f.nproc_per_node >= 0 || f.no_ssh ||
         env("PET_NNODES").has_value() || env("SKYPILOT_NUM_NODES").has_value();
}

StatusOr<Agent> resolve_agent(const AgentFlags& f, const comm::EnvLookup& env,
                              const std::vector<HostfileEntry>& hostfile,
                              const std::string& hostname) {
  Agent a;
  bool have_n = false, have_k = false, have_p = false, have_addr = false, have_port = false;
  std::string src;
  take(a.nnodes, have_n, src, f.nnodes, f.nnodes >= 0, "--nnodes");
  take(a.node_rank, have_k, src, f.node_rank, f.node_rank >= 0, "--node_rank");
  take(a.nproc_per_node, have_p, src, f.nproc_per_node, f.nproc_per_node >= 0, "--nproc_per_node");
  take(a.master_addr, have_addr, src, f.master_addr, !f.master_addr.empty(), "--master_addr");
  take(a.master_port, have_port, src, f.master_port, f.master_port > 0, "--master_port");
  if (f.no_ssh) {
    if (hostfile.empty())
      return invalid_argument("--no_ssh needs a hostfile (-H FILE): its hosts are the nodes");
    if (!have_k)
      return invalid_argument("--no_ssh needs --node_rank: this node's line in the hostfile");
    if (f.node_rank >= static_cast<int>(hostfile.size()))
      return invalid_argument("--node_rank " + std::to_string(f.node_rank) + " is past the " +
                              std::to_string(hostfile.size()) + " hosts of the hostfile");
    take(a.nnodes, have_n, src, static_cast<int>(hostfile.size()), true, "the hostfile's hosts");
    take(a.nproc_per_node, have_p, src, hostfile[f.node_rank].slots, true,
         "this host's slots in the hostfile");
    const std::string first = hostfile.front().host;
    take(a.master_addr, have_addr, src, first == "localhost" ? hostname : first, true,
         "the hostfile's first host");
  }
  // Kubeflow (PyTorchJob, Trainer v2 torch policy).
  ZT_ASSIGN_OR_RETURN(std::optional<int> pn, pet_nnodes(env));
  ZT_ASSIGN_OR_RETURN(std::optional<int> pk, env_int(env, "PET_NODE_RANK", 0));
  ZT_ASSIGN_OR_RETURN(std::optional<int> pp, env_int(env, "PET_NPROC_PER_NODE", 1));
  ZT_ASSIGN_OR_RETURN(std::optional<int> pport, env_int(env, "PET_MASTER_PORT", 1));
  take(a.nnodes, have_n, src, pn.value_or(0), pn.has_value(), "PET_NNODES");
  take(a.node_rank, have_k, src, pk.value_or(0), pk.has_value(), "PET_NODE_RANK");
  take(a.nproc_per_node, have_p, src, pp.value_or(0), pp.has_value(), "PET_NPROC_PER_NODE");
  const std::optional<std::string> paddr = env("PET_MASTER_ADDR");
  take(a.master_addr, have_addr, src, paddr.value_or(""), paddr.has_value(), "PET_MASTER_ADDR");
  take(a.master_port, have_port, src, pport.value_or(0), pport.has_value(), "PET_MASTER_PORT");
  // SkyPilot.
  ZT_ASSIGN_OR_RETURN(std::optional<int> sn, env_int(env, "SKYPILOT_NUM_NODES", 1));
  ZT_ASSIGN_OR_RETURN(std::optional<int> sk, env_int(env, "SKYPILOT_NODE_RANK", 0));
  ZT_ASSIGN_OR_RETURN(std::optional<int> sp, env_int(env, "SKYPILOT_NUM_GPUS_PER_NODE", 0));
  take(a.nnodes, have_n, src, sn.value_or(0), sn.has_value(), "SKYPILOT_NUM_NODES");
  take(a.node_rank, have_k, src, sk.value_or(0), sk.has_value(), "SKYPILOT_NODE_RANK");
  // A CPU node reports 0 GPUs: one worker.
  take(a.nproc_per_node, have_p, src, std::max(1, sp.value_or(1)), sp.has_value(),
       "SKYPILOT_NUM_GPUS_PER_NODE");
  if (const std::optional<std::string> ips = env("SKYPILOT_NODE_IPS")) {
    std::istringstream lines(*ips);
    std::string first;
    std::getline(lines, first);
    take(a.master_addr, have_addr, src, first, !first.empty(), "the first of SKYPILOT_NODE_IPS");
  }

  if (a.nnodes < 1)
    return invalid_argument("--nnodes must be >= 1 (got " + std::to_string(a.nnodes) + ")");
  if (a.nproc_per_node < 1)
    return invalid_argument("--nproc_per_node must be >= 1 (got " +
                            std::to_string(a.nproc_per_node) + ")");
  if (a.nnodes > 1 && !have_k)
    return invalid_argument("a job of " + std::to_string(a.nnodes) +
                            " nodes needs this node's index: --node_rank K (or PET_NODE_RANK, "
                            "SKYPILOT_NODE_RANK)");
  if (a.node_rank >= a.nnodes)
    return invalid_argument("--node_rank " + std::to_string(a.node_rank) + " is outside " +
                            std::to_string(a.nnodes) + " node(s)");
  if (a.nnodes > 1 && a.master_addr.empty())
    return invalid_argument("a job of " + std::to_string(a.nnodes) +
                            " nodes needs node 0's address on every node: --master_addr HOST "
                            "(or PET_MASTER_ADDR, SKYPILOT_NODE_IPS)");
  if (a.nnodes > 1 && !have_port) {
    a.master_port = 29500;  // DeepSpeed's and torchrun's default, the same on every node
    src += (src.empty() ? "" : ", ") + std::string("the default port");
  }
  a.source = src.empty() ? "defaults" : src;
  return a;
}

}  // namespace zerotrain::launch
