// Job plan for `zerotrain run`: from the selected hosts and slots to one
// WorkerSpec per rank (its environment and the exact argv the launcher
// executes), plus shell quoting, the ssh command line for remote hosts and
// `.deepspeed_env` parsing. Pure functions: no processes, no environment.
//
//   JobArgs args;
//   args.command = {"python3", "train.py"};
//   args.master_port = 29500;
//   args.job_secret = "0123...";  // 32 hex chars
//   ZT_ASSIGN_OR_RETURN(JobPlan plan, plan_job(selection.nodes, args));
//   for (const WorkerSpec& w : plan.workers) std::puts(render_command(w).c_str());
//
// What a worker gets (compare DeepSpeed's launch.py):
//  * RANK (host by host in order, slot order within a host), LOCAL_RANK,
//    WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
//    ZEROTRAIN_NODE_RANK, ZEROTRAIN_JOB_SECRET, and CUDA_VISIBLE_DEVICES set
//    to exactly its own physical device id, so each worker sees its device as
//    device 0. (DeepSpeed gives every local rank the node's whole list and
//    expects the worker to index it with LOCAL_RANK; we do not.)
//  * No `--local_rank=N` argument is appended: workers read LOCAL_RANK.
//  * Local workers inherit the launcher's environment. In a job with any
//    remote host, every worker also gets `extra_env` (the `.deepspeed_env`
//    lines and forwarded settings), as DeepSpeed's multi-node runner does.
//  * A remote worker runs as
//      ssh -o BatchMode=yes HOST 'cd CWD && read -r ZEROTRAIN_JOB_SECRET &&
//        export ZEROTRAIN_JOB_SECRET && exec env K=V ... PROG ARGS'
//    and the secret is written to ssh's stdin, so it never appears in a
//    process list (`ps`) on either machine.
//
// Thread-safety: pure functions; safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "launch/resources.h"

namespace zerotrain::launch {

constexpr int kDefaultMasterPort = 29500;  // DeepSpeed's default

struct EnvVar {
  std::string name, value;
  bool operator==(const EnvVar&) const = default;
};

struct WorkerSpec {
  int rank = 0, local_rank = 0, node_rank = 0;
  std::string host;
  int device = 0;                 // physical slot id; the worker's CUDA_VISIBLE_DEVICES
  bool remote = false;            // runs through ssh
  std::vector<EnvVar> env;        // set over the inherited environment
  std::vector<std::string> argv;  // what the launcher executes (PROG ARGS, or ssh ...)
  std::string stdin_data;         // written to the worker's stdin, then closed
};

struct JobArgs {
  std::vector<std::string> command;  // PROG ARGS...
  std::string master_addr;           // empty = 127.0.0.1 (local-only) or the first host
  int master_port = -1;              // -1 = kDefaultMasterPort
  std::string job_secret;
  std::string cwd;                // remote workers cd here first
  std::string hostname;           // this machine, for is_local_host
  std::vector<EnvVar> extra_env;  // exported in jobs with a remote host
  // Agent mode (agent.h): these nodes are part of a larger job whose ranks
  // start at first_rank, whose nodes at first_node, of world_size ranks in
  // all (0: the slots given here).
  int first_rank = 0, first_node = 0, world_size = 0;
  // > 0: the job's restart number (--max_restarts), given to every worker
  // as ZEROTRAIN_RESTART_COUNT.
  int restart_count = 0;
  int ssh_port = -1;  // > 0: ssh -p PORT
};

struct JobPlan {
  std::vector<WorkerSpec> workers;  // index == rank - first_rank
  std::string master_addr;
  int master_port = 0;
  bool local_only = true;
  // A cluster launcher's generated hostfile (backends.h), written to
  // hostfile_path before the job starts and removed after it.
  std::string hostfile_path, hostfile_text;
};

// True when every host is this machine (see is_local_host).
bool all_local(const std::vector<NodeSlots>& nodes, std::string_view hostname);

// Rank 0's address when --master_addr is not given: 127.0.0.1 for a
// local-only job, else the first host (this machine's name if it is local).
std::string default_master_addr(const std::vector<NodeSlots>& nodes, std::string_view hostname);

// InvalidArgument when there is no command or nothing selected.
StatusOr<JobPlan> plan_job(const std::vector<NodeSlots>& nodes, const JobArgs& args);

// One shell word: unchanged when made of safe characters, else in single
// quotes with embedded quotes as '\''. "" becomes ''.
std::string shell_quote(std::string_view word);

// The worker as one copy-pasteable shell line (what --dry-run prints):
//   env RANK=0 ... PROG ARGS
//   echo SECRET | ssh -o BatchMode=yes HOST '...'
std::string render_command(const WorkerSpec& worker);

// KEY=VALUE lines; blank lines and `#` comments skipped; key and value
// trimmed. A line without '=' or with a key that is not an identifier is an
// error naming path:line.
StatusOr<std::vector<EnvVar>> parse_env_file(std::string_view text, std::string_view path);

// `over` replaces same-named entries of `base`; new names are appended.
void merge_env(std::vector<EnvVar>& base, const std::vector<EnvVar>& over);

}  // namespace zerotrain::launch
