// What the machine is: CPU model, ISA features the probes can use (CPUID and
// the OS's XSAVE state, not just the compiler's), cache and memory sizes.
// The probes pick their kernels from this, and RESULTS.md records it.
//
//   const CpuInfo& cpu = detect_cpu();
//   if (cpu.avx512f) ...;  // AVX-512 usable by this process
//
// Thread-safety: detect_cpu() computes once (static local) and returns a
// const reference; safe from any thread.
#pragma once

#include <cstdint>
#include <string>

namespace zerotrain::bench {

struct CpuInfo {
  std::string model;         // /proc/cpuinfo "model name"
  int logical_cpus = 1;      // online CPUs this process may run on
  bool avx2_fma = false;     // AVX2 + FMA, and the OS saves YMM state
  bool avx512f = false;      // AVX-512F, and the OS saves ZMM/opmask state
  bool avx512_bf16 = false;  // vdpbf16ps
  bool amx_bf16 = false;     // AMX-TILE + AMX-BF16 in CPUID (the OS grant is separate)
  int64_t l2_bytes = 0;      // per core; 0 if unknown
  int64_t llc_bytes = 0;     // last-level cache as reported (a VM may report the host's)
  int64_t mem_total_bytes = 0;
  int64_t mem_available_bytes = 0;  // at detection time
};

const CpuInfo& detect_cpu();

// /proc/loadavg's first three fields, or {-1, -1, -1}.
struct LoadAverage {
  double one = -1, five = -1, fifteen = -1;
};
LoadAverage load_average();

}  // namespace zerotrain::bench
