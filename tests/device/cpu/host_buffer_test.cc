// HostBuffer: zeroed page-aligned memory, pinning that holds when allowed
// (VmLck grows by the mapped size) and degrades to one warning when refused.
#include "device/cpu/host_buffer.h"

#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace zerotrain::device::cpu {
namespace {

// kB of locked memory of this process (/proc/self/status VmLck).
int64_t vm_locked_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmLck:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

// Drops CAP_IPC_LOCK (root ignores RLIMIT_MEMLOCK otherwise) and sets the
// lock limit to 0, so mlock must fail. Only for a forked death-test child.
bool forbid_locking() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &hdr, data) != 0) return false;
  data[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
  if (syscall(SYS_capset, &hdr, data) != 0) return false;
  rlimit r{0, 0};
  return setrlimit(RLIMIT_MEMLOCK, &r) == 0;
}

TEST(HostBufferTest, ZeroedPageAlignedAndSizedExactly) {
  auto b = HostBuffer<float>::allocate(1000, /*pin=*/false);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(b->size(), 1000u);
  EXPECT_EQ(b->size_bytes(), 4000);
  EXPECT_EQ(b->reserved_bytes(), 4096);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % host_memory::kPageBytes, 0u);
  EXPECT_FALSE(b->pinned());
  for (float v : b->span()) ASSERT_EQ(v, 0.0f);
  b->span()[999] = 3.0f;  // the whole range is writable
  EXPECT_EQ(b->data()[999], 3.0f);
}

TEST(HostBufferTest, EmptyAndMovedFromBuffersHoldNothing) {
  auto e = HostBuffer<float>::allocate(0, true);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->empty());
  EXPECT_EQ(e->size_bytes(), 0);
  auto a = HostBuffer<double>::allocate(10, false);
  ASSERT_TRUE(a.ok());
  HostBuffer<double> moved = std::move(*a);
  EXPECT_EQ(moved.size(), 10u);
  EXPECT_EQ(a->size(), 0u);  // NOLINT: moved-from state is defined
  EXPECT_EQ(a->data(), nullptr);
}

// AddressSanitizer intercepts mlock/munlock as no-ops (it warns "mlock is
// not supported"), so page locking can only be observed without it.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMlockIntercepted = true;
#else
constexpr bool kMlockIntercepted = false;
#endif

TEST(HostBufferTest, PinnedBufferIsLockedAndUnlockedOnRelease) {
  if (kMlockIntercepted) GTEST_SKIP() << "AddressSanitizer makes mlock a no-op";
  const int64_t before_kb = vm_locked_kb();
  const int64_t before_pinned = host_memory::pinned_bytes();
  ASSERT_GE(before_kb, 0);
  {
    auto b = HostBuffer<float>::allocate(1 << 18, /*pin=*/true);  // 1 MiB
    ASSERT_TRUE(b.ok());
    if (!b->pinned()) GTEST_SKIP() << "this process may not lock 1 MiB (RLIMIT_MEMLOCK)";
    EXPECT_EQ(vm_locked_kb() - before_kb, 1024);
    EXPECT_EQ(host_memory::pinned_bytes() - before_pinned, 1 << 20);
  }
  EXPECT_EQ(vm_locked_kb(), before_kb);
  EXPECT_EQ(host_memory::pinned_bytes(), before_pinned);
}

// Counts the lines of `text` that contain `needle`.
int count_lines_with(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(HostBufferTest, RefusedPinningWarnsOnceNamingSizeAndLimitAndStaysUsable) {
  if (kMlockIntercepted) GTEST_SKIP() << "AddressSanitizer makes mlock a no-op";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (!forbid_locking()) std::_Exit(3);
        // Capture this child's stderr to count the warnings.
        std::FILE* log = std::tmpfile();
        const int saved = dup(2);
        dup2(fileno(log), 2);
        auto a = HostBuffer<float>::allocate(1 << 16, true);
        auto b = HostBuffer<float>::allocate(1 << 16, true);
        dup2(saved, 2);
        if (!a.ok() || !b.ok()) std::_Exit(4);
        if (a->pinned() || b->pinned() || !host_memory::pin_warning_logged()) std::_Exit(5);
        a->span()[0] = 1.0f;  // still ordinary memory
        if (a->span()[0] != 1.0f) std::_Exit(6);
        std::string text(4096, '\0');
        std::rewind(log);
        text.resize(std::fread(text.data(), 1, text.size(), log));
        std::fprintf(stderr, "%s", text.c_str());
        std::_Exit(count_lines_with(text, "could not lock") == 1 ? 0 : 7);
      },
      testing::ExitedWithCode(0),
      "could not lock 262144 bytes of host memory .*RLIMIT_MEMLOCK is 0 bytes");
}

}  // namespace
}  // namespace zerotrain::device::cpu
