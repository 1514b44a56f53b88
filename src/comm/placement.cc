// Worker-side rank discovery (see placement.h).
#include "comm/placement.h"

#include <charconv>
#include <vector>

#include "comm/slurm_nodelist.h"
#include "core/env.h"

namespace zerotrain::comm {
namespace {

// One launcher's variables. local_size may be null (the launcher sets none).
struct Contract {
  const char* name;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};

// Per-process launchers other than Slurm, in precedence order.
constexpr Contract kMpiFamily[] = {
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"MPICH/Intel MPI (PMI)", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"MVAPICH2", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK",
     "MV2_COMM_WORLD_LOCAL_SIZE"},
    {"Flux", "FLUX_TASK_RANK", "FLUX_JOB_SIZE", "FLUX_TASK_LOCAL_ID", nullptr},
    {"LSF jsrun", "JSM_NAMESPACE_RANK", "JSM_NAMESPACE_SIZE", "JSM_NAMESPACE_LOCAL_RANK",
     "JSM_NAMESPACE_LOCAL_SIZE"},
};

// env_int, for a contract that may lack the variable (name null).
StatusOr<std::optional<int>> read_int(const EnvLookup& env, const char* name, int min) {
  if (name == nullptr) return std::optional<int>();
  return env_int(env, name, min);
}

std::string list(std::initializer_list<const char*> names) {
  std::string out;
  for (const char* n : names)
    if (n != nullptr) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

Status check_ranges(const Placement& p) {
  if (p.rank >= p.world_size)
    return invalid_argument(p.contract + ": rank " + std::to_string(p.rank) +
                            " is outside world size " + std::to_string(p.world_size) + " (" +
                            p.source + ")");
  if (p.local_rank && p.local_world_size && *p.local_rank >= *p.local_world_size)
    return invalid_argument(p.contract + ": local rank " + std::to_string(*p.local_rank) +
                            " is outside local size " + std::to_string(*p.local_world_size) + " (" +
                            p.source + ")");
  return ok_status();
}

// The contract when complete; nullopt when absent (or only a size of 1,
// which says nothing); an error when partial.
StatusOr<std::optional<Placement>> read_contract(const EnvLookup& env, const Contract& c) {
  ZT_ASSIGN_OR_RETURN(std::optional<int> rank, read_int(env, c.rank, 0));
  ZT_ASSIGN_OR_RETURN(std::optional<int> size, read_int(env, c.size, 1));
  if (!rank && !size) return std::optional<Placement>();
  if (rank && !size)
    return invalid_argument(std::string(c.name) + ": " + c.rank + " is set but " + c.size +
                            " is not, so the world size is unknown; set " + c.size +
                            " (or RANK and WORLD_SIZE)");
  if (!rank) {
    if (*size == 1) return std::optional<Placement>();
    return invalid_argument(std::string(c.name) + ": " + c.size + "=" + std::to_string(*size) +
                            " says " + std::to_string(*size) + " processes but " + c.rank +
                            " is not set, so this process's rank is unknown");
  }
  Placement p;
  p.rank = *rank;
  p.world_size = *size;
  p.contract = c.name;
  p.external = true;
  ZT_ASSIGN_OR_RETURN(p.local_rank, read_int(env, c.local_rank, 0));
  ZT_ASSIGN_OR_RETURN(p.local_world_size, read_int(env, c.local_size, 1));
  p.source = list({c.rank, c.size, p.local_rank ? c.local_rank : nullptr,
                   p.local_world_size ? c.local_size : nullptr});
  ZT_RETURN_IF_ERROR(check_ranges(p));
  return std::optional<Placement>(p);
}

// zerotrain run, torchrun, Ray: RANK and WORLD_SIZE, the local pair under
// torchrun's or DeepSpeed's name, the node from torchrun's GROUP_RANK or
// zerotrain's ZEROTRAIN_NODE_RANK.
StatusOr<std::optional<Placement>> read_agent_contract(const EnvLookup& env) {
  const char* local_size = env("LOCAL_WORLD_SIZE") ? "LOCAL_WORLD_SIZE" : "LOCAL_SIZE";
  const Contract c{"zerotrain run/torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", local_size};
  ZT_ASSIGN_OR_RETURN(std::optional<Placement> p, read_contract(env, c));
  if (!p) return p;
  p->external = false;
  const char* node = env("ZEROTRAIN_NODE_RANK") ? "ZEROTRAIN_NODE_RANK" : "GROUP_RANK";
  ZT_ASSIGN_OR_RETURN(p->node_rank, read_int(env, node, 0));
  if (p->node_rank) p->source += std::string(", ") + node;
  return p;
}

StatusOr<std::optional<Placement>> read_slurm(const EnvLookup& env) {
  const char* ntasks = env("SLURM_NTASKS") ? "SLURM_NTASKS" : "SLURM_NPROCS";
  const Contract c{"Slurm", "SLURM_PROCID", ntasks, "SLURM_LOCALID", nullptr};
  ZT_ASSIGN_OR_RETURN(std::optional<Placement> p, read_contract(env, c));
  if (!p) return p;
  ZT_ASSIGN_OR_RETURN(p->node_rank, read_int(env, "SLURM_NODEID", 0));
  if (p->node_rank) p->source += ", SLURM_NODEID";
  // The local size: this node's entry of the compressed task counts.
  if (const std::optional<std::string> tpn = env("SLURM_TASKS_PER_NODE"); tpn && p->node_rank) {
    ZT_ASSIGN_OR_RETURN(std::vector<int> counts, expand_tasks_per_node(*tpn));
    if (*p->node_rank >= static_cast<int>(counts.size()))
      return invalid_argument("Slurm: SLURM_NODEID=" + std::to_string(*p->node_rank) +
                              " is past the " + std::to_string(counts.size()) +
                              " nodes of SLURM_TASKS_PER_NODE=" + *tpn);
    p->local_world_size = counts[*p->node_rank];
    p->source += ", SLURM_TASKS_PER_NODE";
  }
  ZT_RETURN_IF_ERROR(check_ranges(*p));
  return p;
}

// Variables that say a launcher started this process without saying its
// rank completely: what to do instead.
Status check_incomplete_launchers(const EnvLookup& env) {
  if (env("PMIX_RANK"))
    return invalid_argument(
        "PMIX_RANK is set but PMIx puts no world size in the environment and no other launcher "
        "variables are complete; set RANK and WORLD_SIZE (e.g. srun --mpi=pmix gives "
        "SLURM_PROCID and SLURM_NTASKS)");
  if (env("PALS_RANKID"))
    return invalid_argument(
        "PALS_RANKID is set but Cray PALS puts no world size in the environment; export "
        "RANK=$PALS_RANKID and WORLD_SIZE");
  ZT_ASSIGN_OR_RETURN(std::optional<int> sky_nodes, read_int(env, "SKYPILOT_NUM_NODES", 1));
  if (sky_nodes && *sky_nodes > 1)
    return invalid_argument(
        "SkyPilot started this process on one of SKYPILOT_NUM_NODES=" + std::to_string(*sky_nodes) +
        " nodes but nothing gives its rank: start the workers with a per-node launcher "
        "(torchrun --nnodes $SKYPILOT_NUM_NODES --node_rank $SKYPILOT_NODE_RANK ...)");
  return ok_status();
}

}  // namespace

StatusOr<std::optional<int>> env_int(const EnvLookup& env, const char* name, int min) {
  const std::optional<std::string> v = env(name);
  if (!v) return std::optional<int>();
  int x = 0;
  const char* end = v->data() + v->size();
  auto [p, ec] = std::from_chars(v->data(), end, x);
  if (ec != std::errc() || p != end || v->empty() || x < min)
    return invalid_argument(std::string(name) + "=" + *v +
                            " is not an integer >= " + std::to_string(min));
  return std::optional<int>(x);
}

EnvLookup process_env() {
  return [](std::string_view name) { return env::get(name); };
}

std::string Placement::describe() const {
  std::string s = "rank " + std::to_string(rank) + "/" + std::to_string(world_size);
  std::string local;
  if (local_rank) local = "local " + std::to_string(*local_rank);
  if (local_world_size)
    local += (local.empty() ? "local ?/" : "/") + std::to_string(*local_world_size);
  if (node_rank)
    local += (local.empty() ? "" : ", ") + std::string("node ") + std::to_string(*node_rank);
  if (!local.empty()) s += " (" + local + ")";
  return s + " from " + contract + (source.empty() ? "" : ": " + source);
}

StatusOr<Placement> discover_placement(const EnvLookup& env) {
  // Kubeflow's PyTorchJob sets RANK to the pod's index and WORLD_SIZE to
  // every process: with several processes a pod, only a per-node launcher
  // (which sets LOCAL_RANK) can number them.
  ZT_ASSIGN_OR_RETURN(std::optional<int> pet_nproc, read_int(env, "PET_NPROC_PER_NODE", 1));
  if (pet_nproc && *pet_nproc > 1 && !env("LOCAL_RANK"))
    return invalid_argument(
        "PET_NPROC_PER_NODE=" + std::to_string(*pet_nproc) +
        " (Kubeflow) asks for several processes a pod, and this one was not started by a "
        "per-node launcher (no LOCAL_RANK): RANK there counts pods, not processes; start the "
        "workers with torchrun");

  ZT_ASSIGN_OR_RETURN(std::optional<Placement> agent, read_agent_contract(env));
  if (agent) return *agent;

  std::optional<Placement> chosen;
  for (const Contract& c : kMpiFamily) {
    ZT_ASSIGN_OR_RETURN(std::optional<Placement> p, read_contract(env, c));
    if (!p) continue;
    if (!chosen) {
      chosen = p;
    } else if (p->rank != chosen->rank || p->world_size != chosen->world_size) {
      return invalid_argument("two launchers disagree about this process: " + chosen->contract +
                              " says rank " + std::to_string(chosen->rank) + "/" +
                              std::to_string(chosen->world_size) + " (" + chosen->source + "), " +
                              p->contract + " says " + std::to_string(p->rank) + "/" +
                              std::to_string(p->world_size) + " (" + p->source + ")");
    }
  }
  ZT_ASSIGN_OR_RETURN(std::optional<Placement> slurm, read_slurm(env));
  if (chosen) {
    if (slurm && (slurm->rank != chosen->rank || slurm->world_size != chosen->world_size))
      chosen->source += " (SLURM_PROCID=" + std::to_string(slurm->rank) +
                        ", SLURM_NTASKS=" + std::to_string(slurm->world_size) +
                        " describe the enclosing Slurm step: not used)";
    else if (slurm && slurm->node_rank && !chosen->node_rank)
      chosen->node_rank = slurm->node_rank;
    return *chosen;
  }
  if (slurm) return *slurm;
  ZT_RETURN_IF_ERROR(check_incomplete_launchers(env));
  return Placement{};
}

}  // namespace zerotrain::comm
