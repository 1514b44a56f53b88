// Environment registry: names, meanings, and typed reads.
#include "core/env.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace zerotrain::env {
namespace {

constexpr Var kRegistry[] = {
    {"RANK", "global rank of this worker, set by `zerotrain run`"},
    {"LOCAL_RANK", "rank of this worker on its host"},
    {"WORLD_SIZE", "number of workers in the job"},
    {"LOCAL_WORLD_SIZE", "number of workers on this host"},
    {"MASTER_ADDR", "address of rank 0's rendezvous store"},
    {"MASTER_PORT", "port of rank 0's rendezvous store"},
    {"ZEROTRAIN_JOB_SECRET", "secret every store client must present (set by the launcher)"},
    {"ZEROTRAIN_RDZV_FILE",
     "rendezvous file on a file system every rank shares: rank 0 writes its store's address "
     "there, the others wait for it (when no launcher gives an address)"},
    {"ZEROTRAIN_RDZV_ID",
     "this run's id in the rendezvous file (default: SLURM_JOB_ID, FLUX_JOB_ID)"},
    {"FLUX_JOB_ID", "Flux: job id"},
    {"ZEROTRAIN_JOB_SECRET_FILE",
     "file holding the job secret (owned by this user, mode 600), for launchers that cannot pass "
     "ZEROTRAIN_JOB_SECRET"},
    // What other launchers tell a worker (comm/placement.h, comm/job_env.h).
    {"LOCAL_SIZE", "ranks on this host, DeepSpeed launcher's name for LOCAL_WORLD_SIZE"},
    {"GROUP_RANK", "torchrun: index of this node"},
    {"OMPI_COMM_WORLD_RANK", "Open MPI: rank"},
    {"OMPI_COMM_WORLD_SIZE", "Open MPI: world size"},
    {"OMPI_COMM_WORLD_LOCAL_RANK", "Open MPI: rank on this host"},
    {"OMPI_COMM_WORLD_LOCAL_SIZE", "Open MPI: ranks on this host"},
    {"PMI_RANK", "MPICH/Intel MPI (Hydra): rank"},
    {"PMI_SIZE", "MPICH/Intel MPI (Hydra): world size"},
    {"MPI_LOCALRANKID", "MPICH/Intel MPI (Hydra): rank on this host"},
    {"MPI_LOCALNRANKS", "MPICH/Intel MPI (Hydra): ranks on this host"},
    {"PMIX_RANK", "PMIx: rank (no size alongside)"},
    {"PALS_RANKID", "Cray PALS: rank (no size alongside)"},
    {"MV2_COMM_WORLD_RANK", "MVAPICH2: rank"},
    {"MV2_COMM_WORLD_SIZE", "MVAPICH2: world size"},
    {"MV2_COMM_WORLD_LOCAL_RANK", "MVAPICH2: rank on this host"},
    {"MV2_COMM_WORLD_LOCAL_SIZE", "MVAPICH2: ranks on this host"},
    {"FLUX_TASK_RANK", "Flux: rank"},
    {"FLUX_JOB_SIZE", "Flux: world size"},
    {"FLUX_TASK_LOCAL_ID", "Flux: rank on this host"},
    {"JSM_NAMESPACE_RANK", "LSF jsrun: rank"},
    {"JSM_NAMESPACE_SIZE", "LSF jsrun: world size"},
    {"JSM_NAMESPACE_LOCAL_RANK", "LSF jsrun: rank on this host"},
    {"JSM_NAMESPACE_LOCAL_SIZE", "LSF jsrun: ranks on this host"},
    {"SLURM_PROCID", "Slurm: rank"},
    {"SLURM_NTASKS", "Slurm: world size"},
    {"SLURM_NPROCS", "Slurm: world size (older name)"},
    {"SLURM_LOCALID", "Slurm: rank on this node"},
    {"SLURM_NODEID", "Slurm: index of this node"},
    {"SLURM_TASKS_PER_NODE", "Slurm: tasks per node, compressed (2(x3),1)"},
    {"SLURM_JOB_NODELIST", "Slurm: the job's hosts, compressed (gpu[01-04])"},
    {"SLURM_NODELIST", "Slurm: the job's hosts (older name)"},
    {"SLURM_JOB_ID", "Slurm: job id (the rendezvous port is 15000 + its last 4 digits)"},
    {"PET_NNODES", "Kubeflow: nodes (pods) in the job, or min:max when elastic"},
    {"PET_NODE_RANK", "Kubeflow: index of this pod"},
    {"PET_NPROC_PER_NODE", "Kubeflow: processes per pod"},
    {"PET_MASTER_ADDR", "Kubeflow: rendezvous host"},
    {"PET_MASTER_PORT", "Kubeflow: rendezvous port"},
    {"SKYPILOT_NUM_NODES", "SkyPilot: nodes in the job"},
    {"SKYPILOT_NODE_IPS", "SkyPilot: the nodes' addresses, head first, one a line"},
    {"SKYPILOT_NODE_RANK", "SkyPilot: index of this node"},
    {"SKYPILOT_NUM_GPUS_PER_NODE", "SkyPilot: GPUs a node (the agent's workers a node)"},
    {"ZEROTRAIN_COMM_TIMEOUT",
     "seconds a collective or store wait may take before failing (default 30)"},
    {"ZEROTRAIN_COMM_BACKEND",
     "a GPU job's communicator: auto (default: NCCL, or Gloo with host staging when two ranks "
     "share a GPU or the build has no NCCL), nccl or gloo"},
    {"ZEROTRAIN_NODE_RANK", "index of this host among the job's hosts"},
    {"ZEROTRAIN_RESTART_COUNT",
     "set by `zerotrain run --max_restarts` on restarted workers: which restart this is; "
     "`zerotrain train --save DIR` then resumes DIR's latest checkpoint"},
    {"ZEROTRAIN_LOG_LEVEL", "debug, info (default), warn or error"},
    {"ZEROTRAIN_DEVICE_MEMORY",
     "capacity of the device's memory, e.g. 512MiB (default unlimited); allocations beyond it "
     "fail"},
    {"ZEROTRAIN_DEVICE",
     "auto (default), cpu or cuda: the device `zerotrain train` trains on (--device)"},
    {"ZEROTRAIN_PEAK_TFLOPS",
     "the device's peak TFLOP/s for the training dtype; when set, monitors log MFU against it"},
    {"CUDA_VISIBLE_DEVICES", "devices this process may use; the launcher sets it per worker"},
    {"OMP_NUM_THREADS", "compute threads per worker"},
    {"HOME", "where `zerotrain run` looks for .deepspeed_env"},
    {"DS_ENV_FILE",
     "name of the KEY=VALUE file exported to remote workers (default .deepspeed_env)"},
    {"ZEROTRAIN_FAULT_KILL_IN_SAVE",
     "tests only: shards, manifest or rename makes rank 0 SIGKILL itself after that phase of a "
     "checkpoint save"},
};

// Families read by prefix (forwarded to remote workers, as DeepSpeed's
// runner exports them): their members are the libraries' own settings.
constexpr Var kPrefixes[] = {
    {"NCCL_", "NCCL's settings (interfaces, IB, debug): forwarded to remote workers"},
    {"UCX_", "UCX's settings (transports): forwarded to remote workers"},
};

bool is_registered(std::string_view name) {
  for (const Var& v : kRegistry)
    if (name == v.name) return true;
  return false;
}

}  // namespace

std::span<const Var> registry() { return kRegistry; }
std::span<const Var> registered_prefixes() { return kPrefixes; }

std::vector<std::pair<std::string, std::string>> with_prefix(std::string_view prefix) {
  bool known = false;
  for (const Var& v : kPrefixes) known = known || prefix == v.name;
  ZT_CHECK(known, "environment prefix ", prefix, " is not registered (src/core/env.cc)");
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view kv(*e);
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos || kv.substr(0, prefix.size()) != prefix) continue;
    out.emplace_back(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return out;
}

std::optional<std::string> get(std::string_view name) {
  ZT_CHECK(is_registered(name), "environment variable ", name,
           " is not in the registry (src/common/env.cc)");
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

StatusOr<int64_t> get_int(std::string_view name, int64_t fallback) {
  std::optional<std::string> text = get(name);
  if (!text) return fallback;
  errno = 0;
  char* end = nullptr;
  long long parsed = std::strtoll(text->c_str(), &end, 10);
  if (text->empty() || *end != '\0' || errno != 0)
    return invalid_argument("environment variable " + std::string(name) + "='" + *text +
                            "' is not an integer");
  return static_cast<int64_t>(parsed);
}

StatusOr<double> get_double(std::string_view name, double fallback) {
  std::optional<std::string> text = get(name);
  if (!text) return fallback;
  errno = 0;
  char* end = nullptr;
  double parsed = std::strtod(text->c_str(), &end);
  if (text->empty() || *end != '\0' || errno != 0)
    return invalid_argument("environment variable " + std::string(name) + "='" + *text +
                            "' is not a number");
  return parsed;
}

std::string describe() {
  std::string out;
  for (const Var& v : kRegistry) {
    const char* value = std::getenv(v.name);
    if (value == nullptr) continue;
    if (!out.empty()) out += ' ';
    out += v.name;
    out += '=';
    out += std::string_view(v.name) == "ZEROTRAIN_JOB_SECRET" ? "<set>" : value;
  }
  return out;
}

}  // namespace zerotrain::env
