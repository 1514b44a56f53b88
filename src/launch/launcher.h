// `zerotrain run`: the DeepSpeed-compatible launcher. cli/ parses the flags
// into LaunchOptions and calls run_launcher(), which selects hosts and slots
// (resources.h), plans one worker per slot (plan.h), then prints (--dry-run)
// or runs and supervises them (supervisor.h).
//
//   LaunchOptions opts;
//   opts.include = "localhost:1";
//   opts.command = {"./train", "--steps", "10"};
//   return run_launcher(opts);  // worker 0 runs with CUDA_VISIBLE_DEVICES=1
//
// Where it differs from `deepspeed` (on purpose):
//  * Every worker's CUDA_VISIBLE_DEVICES is its single device; no
//    `--local_rank` argument is appended (workers read LOCAL_RANK).
//  * A local-only job without --master_port gets a free port (bound to port 0
//    on 127.0.0.1, then released), so concurrent jobs and tests never collide;
//    the small window before rank 0 binds it is accepted. Jobs with a remote
//    host default to 29500.
//  * MASTER_ADDR defaults to 127.0.0.1 (local-only), else the first host
//    (this machine's hostname when that host is local), not `hostname -I`.
//  * --hostfile naming a missing file is an error; the default /job/hostfile
//    is used only when it exists.
//  * ZEROTRAIN_JOB_SECRET: 32 hex chars from /dev/urandom, once per job.
//  * `.deepspeed_env` (or $DS_ENV_FILE; an absolute path is used as is) is
//    read from $HOME and then the current directory (later wins) for jobs
//    with a remote host; ZEROTRAIN_LOG_LEVEL, ZEROTRAIN_COMM_TIMEOUT and
//    OMP_NUM_THREADS are forwarded to remote workers too.
//  * Launcher messages go to stderr, each line starting "zerotrain run:";
//    --dry-run writes one line per worker to `out` (stdout by default).
//
// Exit codes: 0 all workers succeeded; a failed worker's status, or 128 +
// its signal; 128 + signal when the launcher was interrupted; 127 when the
// program cannot be executed; 2 for bad flags, hostfiles or environment.
//
// Thread-safety: run_launcher installs process-wide signal handlers while
// workers run; call it from one thread at a time.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/status.h"
#include "launch/plan.h"

namespace zerotrain::launch {

struct LaunchOptions {
  std::string include, exclude;       // DeepSpeed syntax
  int num_gpus = -1, num_nodes = -1;  // -1 = not given
  std::string hostfile;               // empty = /job/hostfile if it exists, else none
  std::string master_addr;            // empty = infer
  int master_port = -1;               // -1 = not given
  bool dry_run = false;               // print one line per worker and exit 0
  double grace_period_s = 5;          // SIGTERM -> SIGKILL delay when stopping workers
  std::vector<std::string> command;   // PROG ARGS...
  // Per-node agent mode (agent.h): --nnodes, --node_rank,
  // --nproc_per_node, --no_ssh; master_addr/master_port above.
  int nnodes = -1, node_rank = -1, nproc_per_node = -1;
  bool no_ssh = false;
  // After a worker fails, restart every worker up to this many times (as
  // torchrun's --max-restarts); each restart is planned afresh and its
  // workers get ZEROTRAIN_RESTART_COUNT, from which `zerotrain train
  // --save DIR` resumes DIR's latest checkpoint. Not in agent mode.
  int max_restarts = 0;
  int restart_count = 0;  // set by run_launcher for each restart
  // How remote workers start (backends.h): "ssh" (one ssh per worker, the
  // default), or "pdsh", "openmpi", "mpich", "impi", "slurm" for the whole
  // job; used when a host is remote, or always with force_multi.
  std::string launcher = "ssh";
  std::string launcher_args;  // extra arguments for that launcher
  int ssh_port = -1;          // ssh -p PORT for remote workers
  bool force_multi = false;

  // For tests and callers that know better than the machine:
  int gpu_count = -1;           // -1 = count the entries of /proc/driver/nvidia/gpus
  std::ostream* out = nullptr;  // --dry-run output; nullptr = stdout
};

// Returns the process exit code for `zerotrain run` (see above).
int run_launcher(const LaunchOptions& options);

// The plan run_launcher would execute (resource selection, environment,
// ports, secret), without running anything; errors name the flag or file.
StatusOr<JobPlan> plan_launch(const LaunchOptions& options);

// Number of entries in `dir` (one per GPU in /proc/driver/nvidia/gpus); 0
// when it does not exist.
int count_gpus(const std::string& dir = "/proc/driver/nvidia/gpus");

// A TCP port that was free on 127.0.0.1 a moment ago (bind to port 0).
StatusOr<int> pick_free_port();

// 32 lowercase hex characters from /dev/urandom.
StatusOr<std::string> make_job_secret();

}  // namespace zerotrain::launch
