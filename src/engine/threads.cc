// OpenMP thread count per rank from the cores and the ranks on this host.
#include "engine/threads.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>

#include "common/env.h"

namespace zerotrain::engine {

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return std::max(1, omp_get_num_procs());
  return std::max(1, CPU_COUNT(&set));
}

int configure_compute_threads(int local_ranks) {
  if (env::get("OMP_NUM_THREADS")) return omp_get_max_threads();
  if (local_ranks <= 0) {
    StatusOr<int64_t> n = env::get_int("LOCAL_WORLD_SIZE", 1);
    local_ranks = n.ok() ? static_cast<int>(std::max<int64_t>(1, *n)) : 1;
  }
  const int threads = std::max(1, available_cores() / local_ranks);
  omp_set_num_threads(threads);
  return threads;
}

}  // namespace zerotrain::engine
