// Worker-side rank discovery: which rank of how many this process is, read
// from whatever started it. One strict function over the environment:
//
//   ZT_ASSIGN_OR_RETURN(Placement p, discover_placement(process_env()));
//   // p.describe(): "rank 1/2 (local 1/2) from OMPI_COMM_WORLD_RANK, ..."
//
// Contracts, in order (../shared/reference/clusters.md §2, §4):
//   1. zerotrain run / torchrun / Ray: RANK, WORLD_SIZE [, LOCAL_RANK,
//      LOCAL_WORLD_SIZE (or DeepSpeed's LOCAL_SIZE)]. A per-node agent sets
//      these inside any outer launcher (`srun torchrun`), so when present
//      they win and the outer launcher's variables are not consulted.
//   2. Per-process launchers: Open MPI (OMPI_COMM_WORLD_*), MPICH / Intel
//      MPI (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS), MVAPICH2
//      (MV2_COMM_WORLD_*), Flux (FLUX_TASK_RANK, FLUX_JOB_SIZE,
//      FLUX_TASK_LOCAL_ID), LSF jsrun (JSM_NAMESPACE_*), then Slurm
//      (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; the local size from
//      SLURM_TASKS_PER_NODE and SLURM_NODEID). The first complete one wins;
//      two complete MPI-family contracts that disagree are an error. Slurm
//      comes last and is overridden when an MPI contract is complete: mpirun
//      inside an allocation leaves the enclosing step's SLURM_* in the
//      ranks' environment, and the MPI numbering is the one that started
//      this process.
// A partial contract (a rank without a size, a size > 1 without a rank) is
// an error naming what is set and what is missing: never a silent world of
// 1. Kubeflow's PET_NPROC_PER_NODE or SkyPilot's SKYPILOT_NODE_RANK without
// LOCAL_RANK means a per-node launcher was expected: an error naming it.
// Nothing set at all: rank 0 of 1.
//
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace zerotrain::comm {

// A variable's value, or nullopt when unset (tests pass a table).
using EnvLookup = std::function<std::optional<std::string>(std::string_view)>;

// This process's environment, through the registry (core/env.h).
EnvLookup process_env();

// An integer variable: nullopt when unset; InvalidArgument "NAME=V is not
// an integer >= MIN" when set to anything else.
StatusOr<std::optional<int>> env_int(const EnvLookup& env, const char* name, int min);

struct Placement {
  int rank = 0;
  int world_size = 1;
  std::optional<int> local_rank;        // unknown when the contract has none
  std::optional<int> local_world_size;  // ranks on this host
  std::optional<int> node_rank;         // this host's index, when the contract says
  std::string contract = "none";        // "Open MPI", "Slurm", ...
  std::string source;                   // the variables read, comma-separated
  // Started by a process manager other than zerotrain's launcher or torchrun.
  bool external = false;
  // "rank 1/2 (local 1/2, node 0) from Open MPI: OMPI_COMM_WORLD_RANK, ..."
  std::string describe() const;
};

StatusOr<Placement> discover_placement(const EnvLookup& env);

}  // namespace zerotrain::comm
