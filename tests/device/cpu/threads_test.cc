// device/cpu/threads.h: ranks x threads = cores unless OMP_NUM_THREADS is set.
#include "device/cpu/threads.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>

#include "core/env.h"

namespace zerotrain::device::cpu {
namespace {

TEST(Threads, RanksTimesThreadsIsTheCoreCount) {
  if (env::get("OMP_NUM_THREADS")) GTEST_SKIP() << "OMP_NUM_THREADS is set";
  const int cores = available_cores();
  EXPECT_EQ(configure_compute_threads(1), cores);
  EXPECT_EQ(omp_get_max_threads(), cores);
  EXPECT_EQ(configure_compute_threads(2), std::max(1, cores / 2));
  EXPECT_EQ(configure_compute_threads(4 * cores), 1);
  EXPECT_EQ(local_ranks_from_env(3),
            env::get("LOCAL_WORLD_SIZE") ? *env::get_int("LOCAL_WORLD_SIZE", 0) : 3);
  configure_compute_threads(1);
}

}  // namespace
}  // namespace zerotrain::device::cpu
