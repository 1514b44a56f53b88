// OpenMP thread count per rank from the cores and the ranks on this host.
#include "device/cpu/threads.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>

#include "core/env.h"

namespace zerotrain::device::cpu {

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return std::max(1, omp_get_num_procs());
  return std::max(1, CPU_COUNT(&set));
}

int local_ranks_from_env(int fallback) {
  StatusOr<int64_t> n = env::get_int("LOCAL_WORLD_SIZE", fallback);
  return n.ok() && *n >= 1 ? static_cast<int>(*n) : std::max(1, fallback);
}

int configure_compute_threads(int local_ranks) {
  if (env::get("OMP_NUM_THREADS")) return omp_get_max_threads();
  const int threads = std::max(1, available_cores() / std::max(1, local_ranks));
  omp_set_num_threads(threads);
  return threads;
}

}  // namespace zerotrain::device::cpu
