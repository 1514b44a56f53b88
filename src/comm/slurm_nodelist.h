// Slurm's compressed host lists and task counts, as srun puts them in the
// environment (SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE):
//
//   expand_nodelist("gpu[01-03,07],cpu-[9-10]")
//     -> gpu01 gpu02 gpu03 gpu07 cpu-9 cpu-10
//   expand_nodelist("rack[1-2]-n[1-2]") -> rack1-n1 rack1-n2 rack2-n1 rack2-n2
//   expand_tasks_per_node("2(x3),1") -> 2 2 2 1
//
// Zero padding follows the range's first bound: n[08-10] gives n08 n09
// n10, n[8-10] gives n8 n9 n10 (as scontrol show hostnames). Malformed
// input, and what scontrol refuses (text after the last range: a[0-1]b),
// is InvalidArgument quoting it.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace zerotrain::comm {

StatusOr<std::vector<std::string>> expand_nodelist(std::string_view list);
StatusOr<std::vector<int>> expand_tasks_per_node(std::string_view counts);

}  // namespace zerotrain::comm
