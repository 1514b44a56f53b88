// Worker supervision for `zerotrain run`: spawns one process per WorkerSpec,
// each in its own process group, waits on all of them, and stops the job
// when one fails or the launcher is signalled.
//
//   SupervisorOptions opts;
//   opts.grace_period_s = 5;
//   int code = supervise(plan.workers, opts);  // the process exit code
//
// Behaviour:
//  * A worker that exits non-zero or is killed by a signal stops the job:
//    SIGTERM to every other worker's process group, SIGKILL after
//    grace_period_s, then one line on stderr, e.g.
//      zerotrain run: rank 2 (host localhost, local rank 2) was killed by
//      signal 9 (SIGKILL); stopped the other 3 workers
//    and the result is its exit status, or 128 + signal.
//  * SIGINT, SIGTERM or SIGHUP to the launcher is forwarded to every worker's
//    process group, with the same SIGKILL-after-grace escalation (a second
//    signal escalates at once); the result is 128 + that signal.
//  * SIGTSTP (Ctrl-Z) to the launcher is forwarded to the workers, then the
//    launcher stops itself; when it is continued (fg/bg) it sends SIGCONT to
//    the workers. (The terminal's job control sees only the launcher.)
//  * A program that cannot be executed (missing, not executable) is reported
//    at once ("cannot run 'x': No such file or directory") with result 127;
//    workers already started are stopped.
//  * A worker gets SIGTERM when the launcher dies without stopping it
//    (PR_SET_PDEATHSIG), e.g. when the launcher is SIGKILLed.
//  * Exits are noticed through SIGCHLD written to a self-pipe that poll()
//    waits on: no polling interval, no busy loop.
//  * Every worker's stdin is /dev/null (or a pipe carrying stdin_data, then
//    EOF): a worker in its own process group reading the terminal would be
//    stopped by SIGTTIN and hang the job.
//  * Grandchildren that outlive their worker are not tracked; they do get
//    the stop signals while the worker (their group leader) is alive.
//  * A remote worker is its ssh client: stopping it ends ssh, and the remote
//    program then loses its stdout/stderr (SIGPIPE on its next write) and its
//    peers, whose collectives fail after the comm timeout. As with
//    DeepSpeed's pdsh runner, nothing kills it on the remote host directly.
//
// Thread-safety: installs process-wide handlers for SIGCHLD, SIGINT, SIGTERM,
// SIGHUP, SIGTSTP and ignores SIGPIPE while it runs (restored on return). Only one
// supervise() may run in a process at a time (checked).
#pragma once

#include <vector>

#include "launch/plan.h"

namespace zerotrain::launch {

struct SupervisorOptions {
  double grace_period_s = 5;  // SIGTERM -> SIGKILL delay when stopping workers
};

// Why the job ended, for the launcher's restart decision.
enum class JobEnd { kSucceeded, kWorkerFailed, kSpawnFailed, kInterrupted };

struct SupervisedJob {
  int code = 0;  // the process exit code (see above)
  JobEnd end = JobEnd::kSucceeded;
};

SupervisedJob supervise_job(const std::vector<WorkerSpec>& workers,
                            const SupervisorOptions& options);
// supervise_job(...).code.
int supervise(const std::vector<WorkerSpec>& workers, const SupervisorOptions& options);

}  // namespace zerotrain::launch
