// Slurm node lists against Slurm's own expansion (`scontrol show
// hostnames`, which needs no daemon, only a slurm.conf), and the compressed
// task counts srun sets.
#include "comm/slurm_nodelist.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "integration/subprocess.h"

namespace zerotrain::comm {
namespace {

TEST(SlurmNodelist, ExpandsAsScontrolDoes) {
  const std::string conf = ::testing::TempDir() + "zt_slurm_" + std::to_string(::getpid());
  std::ofstream(conf) << "ClusterName=zt\nSlurmctldHost=localhost\n"
                         "NodeName=localhost CPUs=1 State=UNKNOWN\n"
                         "PartitionName=debug Nodes=localhost Default=YES\n";
  const char* kLists[] = {"gpu[01-03,07],cpu-[9-11]",
                          "rack[1-2]-n[1-2]",
                          "n[08-10]",
                          "n[8-10]",
                          "n[8-10],m1",
                          "x[001-003,010]",
                          "node1,node2",
                          "a[1-2]-[3-4]",
                          "n[0-1],n[0-1]",
                          "single",
                          "a[0-1]b",
                          "n[9-11]-x",
                          "n[3-1]"};
  for (const char* list : kLists) {
    const zerotrain::testing::ProcessResult r = zerotrain::testing::run_process(
        {"scontrol", "show", "hostnames", list}, std::chrono::seconds(30), {"SLURM_CONF=" + conf});
    ASSERT_NE(r.exit_code, 127)
        << "scontrol not found: scripts/install-deps.sh installs Debian's slurm-client";
    StatusOr<std::vector<std::string>> ours = expand_nodelist(list);
    // scontrol may exit 0 after printing "Invalid hostlist".
    if (r.exit_code != 0 || (r.out + r.err).find("Invalid hostlist") != std::string::npos) {
      EXPECT_FALSE(ours.ok()) << list << ": scontrol refuses it (" << r.err << ")";
      continue;
    }
    ASSERT_TRUE(ours.ok()) << list << ": " << ours.status().to_string();
    std::vector<std::string> theirs;
    std::istringstream lines(r.out);
    for (std::string h; std::getline(lines, h);) theirs.push_back(h);
    EXPECT_EQ(*ours, theirs) << list;
  }
  ::unlink(conf.c_str());
  // Unbalanced brackets: scontrol prints whatever its parser leaves ("n]"
  // for n[1-2); srun never writes them, and zerotrain refuses them.
  for (const char* bad : {"n[1-2", "n1-2]", "", "a,,b", "n[x-2]"})
    EXPECT_FALSE(expand_nodelist(bad).ok()) << bad;
}

// srun's SLURM_TASKS_PER_NODE: counts, "(xN)" repeats.
TEST(SlurmNodelist, TaskCounts) {
  EXPECT_EQ(*expand_tasks_per_node("2(x3),1"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(*expand_tasks_per_node("4"), (std::vector<int>{4}));
  EXPECT_EQ(*expand_tasks_per_node("1,3(x2)"), (std::vector<int>{1, 3, 3}));
  for (const char* bad : {"", "2(x)", "2(x0)", "x", "2(x3", "0"})
    EXPECT_FALSE(expand_tasks_per_node(bad).ok()) << bad;
}

}  // namespace
}  // namespace zerotrain::comm
