// How a worker joins its job from its environment, whoever started it:
// its placement (placement.h), the rendezvous address and the job secret.
//
//   ZT_ASSIGN_OR_RETURN(JobEnv job, job_from_env(process_env()));
//   log::info(job.placement.describe() + ", store at " + job.rendezvous);
//
// Rendezvous address, first found: MASTER_ADDR → PET_MASTER_ADDR (Kubeflow)
// → the first host of SLURM_JOB_NODELIST → the first of SKYPILOT_NODE_IPS →
// a rendezvous file (rdzv_file.h: `zerotrain train --rdzv-file PATH` or
// ZEROTRAIN_RDZV_FILE, with an id from ZEROTRAIN_RDZV_ID, SLURM_JOB_ID or
// FLUX_JOB_ID; rank 0 writes it here, on a free port unless MASTER_PORT
// gives one, and the other ranks wait for it here) → 127.0.0.1 when every
// rank is on this host (the contract's local size is the world size, or
// the world is 1); else an error listing what was tried.
// Port: MASTER_PORT → PET_MASTER_PORT → under Slurm 15000 + the last four
// digits of SLURM_JOB_ID (Lightning's rule, so every rank computes the same
// one) → 29500.
//
// Job secret: ZEROTRAIN_JOB_SECRET, or the contents of
// ZEROTRAIN_JOB_SECRET_FILE (a regular file owned by this user and readable
// by no one else; trailing newline dropped). A job of more than one rank
// without either is refused: its rendezvous store would accept any client.
// ZEROTRAIN_JOB_SECRET=insecure-none is the explicit opt-out for a
// single-tenant cluster (a warning says the store is open).
//
// Thread-safety: pure functions but for reading the secret file.
#pragma once

#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/placement.h"
#include "core/status.h"

namespace zerotrain::comm {

// The value of ZEROTRAIN_JOB_SECRET that runs without one, on purpose.
inline constexpr std::string_view kInsecureNoSecret = "insecure-none";

struct JobEnv {
  CommOptions options;
  Placement placement;
  std::string rendezvous;             // "10.0.0.7:29500 from MASTER_ADDR, MASTER_PORT"
  std::vector<std::string> warnings;  // for the start-up log
};

// rdzv_file: a --rdzv-file flag (over ZEROTRAIN_RDZV_FILE).
StatusOr<JobEnv> job_from_env(const EnvLookup& env, const std::string& rdzv_file = "");

// The job secret alone, by the rules above, for a job of `world_size`
// ranks: the secret, or "" (none needed, or opted out: `warnings` says so).
StatusOr<std::string> job_secret_from_env(const EnvLookup& env, int world_size,
                                          std::vector<std::string>* warnings);

}  // namespace zerotrain::comm
