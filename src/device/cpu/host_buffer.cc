// Host memory for offloaded states: page-aligned mmap, optional mlock,
// one warning when pinning is refused (see host_buffer.h).
#include "device/cpu/host_buffer.h"

#include <sys/mman.h>
#include <sys/resource.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "core/log.h"

namespace zerotrain::device::cpu::host_memory {
namespace {

std::atomic<int64_t> g_pinned_bytes{0};
std::atomic<bool> g_warned{false};

std::string memlock_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_MEMLOCK, &r) != 0) return "unknown";
  if (r.rlim_cur == RLIM_INFINITY) return "unlimited";
  return std::to_string(static_cast<unsigned long long>(r.rlim_cur)) + " bytes";
}

void warn_once(size_t bytes, int err) {
  if (g_warned.exchange(true)) return;
  log::warn("pin_memory: could not lock ", bytes,
            " bytes of host memory (mlock: ", std::strerror(err), "; RLIMIT_MEMLOCK is ",
            memlock_limit(), ", ", pinned_bytes(),
            " bytes already pinned); offloaded states stay pageable. Raise it "
            "with `ulimit -l` (or memlock in /etc/security/limits.conf) to pin");
}

}  // namespace

size_t page_round(size_t bytes) {
  if (bytes > SIZE_MAX - kPageBytes) return SIZE_MAX;
  return (bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
}

void* allocate(size_t bytes, bool pin, bool* pinned) {
  *pinned = false;
  const size_t mapped = page_round(bytes);
  if (mapped == 0 || mapped == SIZE_MAX) return nullptr;
  // Anonymous mappings are zero-filled, page-aligned and returned to the
  // kernel on release (a heap block would keep locked pages in the arena).
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  if (pin) {
    if (mlock(p, mapped) == 0) {
      *pinned = true;
      g_pinned_bytes += static_cast<int64_t>(mapped);
    } else {
      warn_once(mapped, errno);
    }
  }
  return p;
}

void release(void* p, size_t bytes, bool pinned) {
  const size_t mapped = page_round(bytes);
  if (pinned) g_pinned_bytes -= static_cast<int64_t>(mapped);
  munmap(p, mapped);  // also unlocks
}

int64_t pinned_bytes() { return g_pinned_bytes.load(); }
bool pin_warning_logged() { return g_warned.load(); }

}  // namespace zerotrain::device::cpu::host_memory
