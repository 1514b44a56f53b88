// `zerotrain run --launcher openmpi|mpich|impi|slurm|pdsh`: the whole job
// started by a cluster's own launcher instead of one ssh per worker, as
// DeepSpeed's multi-node runners do, without their known faults. One
// command is built and supervised; its workers find their ranks in that
// launcher's variables (comm/placement.h).
//
//   openmpi  mpirun -n N --hostfile F(host slots=N) --mca btl ^openib
//            ARGS -x ZEROTRAIN_JOB_SECRET -x MASTER_ADDR=A -x MASTER_PORT=P
//            -x K=V ... PROG ARGS
//            (no hard-coded `btl_tcp_if_include eth0`; the secret by name,
//            never on the command line)
//   mpich    mpiexec.hydra -n N -f F(host:N) ARGS -genvlist ZEROTRAIN_JOB_SECRET
//   impi     mpirun  -n N -f F(host:N) ARGS -genvlist ZEROTRAIN_JOB_SECRET
//            -genv MASTER_ADDR A -genv MASTER_PORT P -genv K V ... PROG ARGS
//            (non-uniform slots work through the hostfile)
//   slurm    srun -n N --nodes H --nodelist h1,h2 --ntasks-per-node P ARGS
//            --export=ALL,MASTER_ADDR=A,MASTER_PORT=P,K=V PROG ARGS
//            (sized from the selected resources; uniform slots only;
//            `--include` is never passed to srun; the secret travels in the
//            exported environment, not on the command line)
//   pdsh     pdsh -S -f 1024 -w h1,h2 ARGS 'cd CWD && exec env K=V ...
//            zerotrain run --nnodes H --node_rank %n --nproc_per_node P
//            --master_addr A --master_port P -- PROG ARGS' (an agent per
//            node; pdsh has no private channel for the secret, so it needs
//            ZEROTRAIN_JOB_SECRET_FILE on a shared file system, or
//            insecure-none)
// ARGS is --launcher_args, split at spaces (quotes group words).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "launch/plan.h"
#include "launch/resources.h"

namespace zerotrain::launch {

enum class Backend { kSsh, kPdsh, kOpenMpi, kMpich, kImpi, kSlurm };

// "ssh", "pdsh", "openmpi", "mpich", "impi", "slurm" (DeepSpeed's names).
StatusOr<Backend> parse_backend(std::string_view name);

struct BackendArgs {
  std::vector<std::string> command;  // PROG ARGS
  std::string master_addr;
  int master_port = 0;
  std::string job_secret;               // given to the launcher's environment only
  std::vector<EnvVar> exports;          // forwarded settings and .deepspeed_env
  std::string launcher_args;            // --launcher_args
  std::string hostfile_path;            // where the generated hostfile goes (MPI backends)
  std::string cwd;                      // pdsh: the remote shell starts here
  std::string zerotrain = "zerotrain";  // pdsh: the agent binary on the nodes
  std::string secret_file;              // pdsh: ZEROTRAIN_JOB_SECRET_FILE, if set
};

struct BackendJob {
  WorkerSpec launcher;   // the one process to supervise (rank -1)
  std::string hostfile;  // contents for hostfile_path ("" = none)
};

// InvalidArgument for what the backend cannot express (non-uniform slots
// under srun; pdsh without a secret file), naming it.
StatusOr<BackendJob> plan_backend(Backend backend, const std::vector<NodeSlots>& nodes,
                                  const BackendArgs& args);

// Shell-like split: spaces separate words; single or double quotes group.
StatusOr<std::vector<std::string>> split_launcher_args(std::string_view text);

}  // namespace zerotrain::launch
