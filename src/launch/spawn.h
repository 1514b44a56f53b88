// Starting one worker process for the supervisor: fork + execvpe, the child
// in its own process group (so a signal to -pid reaches the worker's own
// children), with PR_SET_PDEATHSIG = SIGTERM (a launcher killed outright
// still takes it down), the worker's variables over the inherited
// environment, and stdin from /dev/null or from a pipe that carries
// WorkerSpec::stdin_data and then EOF.
//
//   ZT_ASSIGN_OR_RETURN(pid_t pid, spawn_worker(worker));
//   ::kill(-pid, SIGTERM);  // the worker and its children
//
// A program that cannot be executed is an error here (NotFound, "cannot run
// 'x': No such file or directory"), not a worker that exits 127 later.
//
// Thread-safety: fork() from any thread; nothing is shared.
#pragma once

#include <sys/types.h>

#include "core/status.h"
#include "launch/plan.h"

namespace zerotrain::launch {

StatusOr<pid_t> spawn_worker(const WorkerSpec& w);

}  // namespace zerotrain::launch
