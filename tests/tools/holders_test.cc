// `zerotrain holders` internals: a forked child that opens and maps test
// "device" files is found and ended by --kill; /proc parsing on a fake
// /proc tree; signal names; never signalling this process or its parent.
#include "tools/holders.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tools/test_util.h"

namespace zerotrain::tools {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(Holders, FindsAndKillsAChildHoldingTestDeviceFiles) {
  TempDir dir;
  const std::string opened = dir.path() + "/ztdev0", mapped = dir.path() + "/ztdev1";
  std::ofstream(opened) << "x";
  std::ofstream(mapped) << std::string(4096, 'y');
  std::ofstream(dir.path() + "/other0") << "not matched";
  HeldChild child({opened, dir.path() + "/other0"}, {mapped});

  StatusOr<HolderScan> scan = find_holders({.pattern = dir.path() + "/ztdev*"});
  ASSERT_TRUE(scan.ok()) << scan.status().message();
  ASSERT_EQ(scan->holders.size(), 1u) << format_holders(*scan, "");
  const Holder& h = scan->holders[0];
  EXPECT_EQ(h.pid, child.pid());
  ASSERT_EQ(h.files.size(), 2u);  // other0 does not match the pattern
  EXPECT_EQ(h.files[0].path, opened);
  EXPECT_TRUE(h.files[0].open_fd);
  EXPECT_FALSE(h.files[0].mapped);
  EXPECT_EQ(h.files[1].path, mapped);
  EXPECT_TRUE(h.files[1].mapped);
  const std::string text = format_holders(*scan, "");
  EXPECT_NE(text.find(std::to_string(child.pid())), std::string::npos);
  EXPECT_NE(text.find(opened + " (F)"), std::string::npos) << text;
  EXPECT_NE(text.find(mapped + " (m)"), std::string::npos) << text;

  std::vector<KillResult> r = kill_holders(scan->holders, SIGTERM, 5s);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].signalled);
  EXPECT_TRUE(r[0].ended);  // a zombie until reaped counts as ended
  EXPECT_NE(format_kill_results(r, SIGTERM).find("ended"), std::string::npos);
  EXPECT_EQ(child.reap(), 128 + SIGTERM);
}

TEST(Holders, NothingMatchingIsAnEmptyList) {
  TempDir dir;
  StatusOr<HolderScan> scan = find_holders({.pattern = dir.path() + "/none*"});
  ASSERT_TRUE(scan.ok());
  EXPECT_TRUE(scan->holders.empty());
  EXPECT_EQ(format_holders(*scan, "/x*"), "no process holds /x*\n");
}

TEST(Holders, ParsesFdLinksAndMapsOfAFakeProcTree) {
  TempDir dir;
  const std::string proc = dir.path() + "/proc";
  fs::create_directories(proc + "/4242/fd");
  fs::create_directories(proc + "/self");  // not a pid: ignored
  fs::create_symlink("/dev/nvidia0", proc + "/4242/fd/7");
  fs::create_symlink("/dev/null", proc + "/4242/fd/0");
  std::ofstream(proc + "/4242/maps")
      << "7f00-7f10 rw-s 00000000 00:05 99 /dev/nvidiactl\n"
      << "7f10-7f20 rw-s 00000000 00:05 98 /dev/nvidia-uvm (deleted)\n"
      << "7f20-7f30 r-xp 00000000 08:01 12 /usr/lib/libc.so.6\n"
      << "7f30-7f40 rw-p 00000000 00:00 0 \n";
  std::ofstream(proc + "/4242/cmdline", std::ios::binary) << std::string("python\0train.py\0", 16);
  StatusOr<HolderScan> scan = find_holders({.pattern = "/dev/nvidia*", .proc_root = proc});
  ASSERT_TRUE(scan.ok()) << scan.status().message();
  ASSERT_EQ(scan->holders.size(), 1u);
  const Holder& h = scan->holders[0];
  EXPECT_EQ(h.pid, 4242);
  EXPECT_EQ(h.command, "python train.py");
  ASSERT_EQ(h.files.size(), 3u);
  EXPECT_EQ(h.files[0].path, "/dev/nvidia-uvm");
  EXPECT_TRUE(h.files[0].mapped);
  EXPECT_EQ(h.files[1].path, "/dev/nvidia0");
  EXPECT_TRUE(h.files[1].open_fd);
  EXPECT_EQ(h.files[2].path, "/dev/nvidiactl");
  EXPECT_FALSE(h.user.empty());
}

TEST(Holders, MissingProcRootIsAnIoErrorNamingIt) {
  StatusOr<HolderScan> scan = find_holders({.proc_root = "/nonexistent/zt-proc"});
  ASSERT_FALSE(scan.ok());
  EXPECT_NE(scan.status().message().find("/nonexistent/zt-proc"), std::string::npos);
}

TEST(Holders, NeverSignalsItselfOrItsParent) {
  std::vector<Holder> holders(2);
  holders[0].pid = getpid();
  holders[1].pid = getppid();
  std::vector<KillResult> r = kill_holders(holders, SIGKILL, 10ms);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_FALSE(r[0].signalled);
  EXPECT_EQ(r[0].note, "not signalled: this process");
  EXPECT_FALSE(r[1].signalled);
  EXPECT_EQ(r[1].note, "not signalled: parent of this process");
}

TEST(Holders, SignalNamesAndNumbers) {
  EXPECT_EQ(*parse_signal("TERM"), SIGTERM);
  EXPECT_EQ(*parse_signal("sigkill"), SIGKILL);
  EXPECT_EQ(*parse_signal("SIGINT"), SIGINT);
  EXPECT_EQ(*parse_signal("9"), 9);
  EXPECT_EQ(*parse_signal("15"), 15);
  for (const char* bad : {"bogus", "0", "999", "", "-9"}) {
    StatusOr<int> s = parse_signal(bad);
    ASSERT_FALSE(s.ok()) << bad;
    std::string quoted = "'";
    quoted.append(bad).append("'");
    EXPECT_NE(s.status().message().find(quoted), std::string::npos);
  }
}

}  // namespace
}  // namespace zerotrain::tools
