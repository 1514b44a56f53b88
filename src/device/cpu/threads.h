// Compute threads per rank: ranks × threads = cores, unless the user set
// OMP_NUM_THREADS (then OpenMP already follows it and nothing changes).
//
//   int threads = configure_compute_threads(/*local_ranks=*/2);  // 1 on 2 cores
//
// Thread-safety: omp_set_num_threads affects the calling thread (and the
// parallel regions it starts) only.
#pragma once

namespace zerotrain::device::cpu {

// CPUs this process may run on (sched_getaffinity), at least 1.
int available_cores();
// Ranks sharing this host: LOCAL_WORLD_SIZE (set by `zerotrain run`), else
// `fallback` (the engine passes the world size).
int local_ranks_from_env(int fallback);
// Unless OMP_NUM_THREADS is set: omp_set_num_threads(max(1, cores /
// local_ranks)). Returns the thread count now in effect.
int configure_compute_threads(int local_ranks);

}  // namespace zerotrain::device::cpu
