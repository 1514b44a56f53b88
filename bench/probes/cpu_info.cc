// CPUID/XGETBV feature detection and /proc, /sys parsing for CpuInfo.
#include "probes/cpu_info.h"

#include <cpuid.h>
#include <sched.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace zerotrain::bench {
namespace {

uint64_t xgetbv0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

void detect_features(CpuInfo& info) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return;
  const bool osxsave = (c >> 27) & 1, fma = (c >> 12) & 1;
  if (!osxsave) return;
  const uint64_t xcr0 = xgetbv0();
  const bool os_ymm = (xcr0 & 0x6) == 0x6;    // SSE + AVX state
  const bool os_zmm = (xcr0 & 0xe6) == 0xe6;  // + opmask, ZMM_Hi256, Hi16_ZMM
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
  info.avx2_fma = os_ymm && fma && ((b >> 5) & 1);
  info.avx512f = os_zmm && ((b >> 16) & 1);
  info.amx_bf16 = ((d >> 22) & 1) && ((d >> 24) & 1);
  unsigned a1, b1, c1, d1;
  if (__get_cpuid_count(7, 1, &a1, &b1, &c1, &d1)) {
    info.avx512_bf16 = info.avx512f && ((a1 >> 5) & 1);
  }
}

// "4096K" / "480 MiB"-style sizes from /sys cache files.
int64_t parse_size(const std::string& text) {
  std::istringstream in(text);
  int64_t value = 0;
  std::string unit;
  in >> value >> unit;
  if (unit.empty() || unit[0] == 'K') return value << 10;
  if (unit[0] == 'M') return value << 20;
  if (unit[0] == 'G') return value << 30;
  return value;
}

void detect_caches(CpuInfo& info) {
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream level_file(dir + "/level"), size_file(dir + "/size"), type_file(dir + "/type");
    int level = 0;
    std::string size, type;
    if (!(level_file >> level) || !std::getline(size_file, size)) break;
    std::getline(type_file, type);
    if (type == "Instruction") continue;
    const int64_t bytes = parse_size(size);
    if (level == 2) info.l2_bytes = bytes;
    if (bytes > info.llc_bytes) info.llc_bytes = bytes;
  }
}

void detect_proc(CpuInfo& info) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos)
        info.model = line.substr(line.find_first_not_of(' ', colon + 1));
      break;
    }
  }
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    int64_t kib = 0;
    meminfo >> kib;
    if (key == "MemTotal:") info.mem_total_bytes = kib << 10;
    if (key == "MemAvailable:") info.mem_available_bytes = kib << 10;
    meminfo.ignore(1 << 20, '\n');
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) info.logical_cpus = CPU_COUNT(&set);
}

}  // namespace

const CpuInfo& detect_cpu() {
  static const CpuInfo info = [] {
    CpuInfo i;
    detect_features(i);
    detect_caches(i);
    detect_proc(i);
    return i;
  }();
  return info;
}

LoadAverage load_average() {
  LoadAverage load;
  std::ifstream in("/proc/loadavg");
  if (!(in >> load.one >> load.five >> load.fifteen)) return LoadAverage{};
  return load;
}

}  // namespace zerotrain::bench
