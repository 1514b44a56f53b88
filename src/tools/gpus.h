// `zerotrain gpus`: memory, utilisation and compute processes of each NVIDIA
// device, read through NVML loaded at run time (dlopen of
// libnvidia-ml.so.1), so the binary has no link-time driver dependency and
// runs unchanged on machines without a GPU.
//
//   StatusOr<std::vector<GpuInfo>> gpus = query_gpus();
//   if (!gpus.ok()) { std::cerr << gpus.status().message(); return 1; }
//   std::cout << format_gpus(*gpus);
//
// Thread-safety: query_gpus initialises and shuts down NVML itself; do not
// call it concurrently with other NVML users in the same process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace zerotrain::tools {

inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

struct GpuProcess {
  uint32_t pid = 0;
  bool used_known = false;  // NVML reports "not available" in some modes
  uint64_t used_bytes = 0;
};

struct GpuInfo {
  int index = 0;
  std::string name;
  uint64_t memory_used = 0, memory_total = 0;  // bytes
  bool utilization_known = false;
  uint32_t utilization_gpu = 0, utilization_memory = 0;  // percent
  bool processes_known = false;                          // false when NVML could not list them
  std::vector<GpuProcess> processes;                     // compute processes
};

// Every device. Unavailable when the library cannot be loaded ("no NVIDIA
// driver: <library> not found ..."), lacks a symbol ("<library>: symbol
// nvmlInit_v2 not found ..."), or NVML fails to initialise (its error
// string). `library` is injectable for tests.
StatusOr<std::vector<GpuInfo>> query_gpus(const std::string& library = kNvmlLibrary);

// A table like nvidia-smi's summary: one line per device, then its processes.
std::string format_gpus(const std::vector<GpuInfo>& gpus);

}  // namespace zerotrain::tools
