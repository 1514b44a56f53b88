// NVML through dlopen: the few entry points `zerotrain gpus` needs, declared
// here with the layouts of nvml.h (driver API, stable across releases).
#include "tools/gpus.h"

#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>

#include "core/shared_library.h"

namespace zerotrain::tools {
namespace {

// nvml.h types, restated. nvmlReturn_t is an enum (int); 0 = NVML_SUCCESS.
using NvmlReturn = int;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlInsufficientSize = 7;
using NvmlDevice = struct NvmlDeviceOpaque*;

struct NvmlMemory {  // nvmlMemory_t (v1): bytes
  unsigned long long total, free, used;
};
struct NvmlUtilization {  // nvmlUtilization_t: percent over the last sample period
  unsigned int gpu, memory;
};
// What nvmlDeviceGetComputeRunningProcesses_v3 (and _v2) write per process:
// nvmlProcessInfo_v2_t = {pid, usedGpuMemory, gpuInstanceId,
// computeInstanceId}, 24 bytes with the padding after pid. Some 12.x
// nvml.h releases briefly added usedGpuCcProtectedMemory to
// nvmlProcessInfo_t; drivers never wrote it through _v3 and later headers
// (and pynvml/nvitop) went back to this layout, so this is the one used.
struct NvmlProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
static_assert(sizeof(NvmlProcessInfo) == 24, "nvmlProcessInfo_v2_t layout");
// usedGpuMemory when unknown (NVML_VALUE_NOT_AVAILABLE).
constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;
constexpr unsigned kNvmlDeviceNameBufferSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE

using InitFn = NvmlReturn (*)();
using ShutdownFn = NvmlReturn (*)();
using GetCountFn = NvmlReturn (*)(unsigned int*);
using GetHandleFn = NvmlReturn (*)(unsigned int, NvmlDevice*);
using GetNameFn = NvmlReturn (*)(NvmlDevice, char*, unsigned int);
using GetMemoryFn = NvmlReturn (*)(NvmlDevice, NvmlMemory*);
using GetUtilizationFn = NvmlReturn (*)(NvmlDevice, NvmlUtilization*);
using GetProcessesFn = NvmlReturn (*)(NvmlDevice, unsigned int*, NvmlProcessInfo*);
using ErrorStringFn = const char* (*)(NvmlReturn);

struct Nvml {
  SharedLibrary library;
  InitFn init = nullptr;
  ShutdownFn shutdown = nullptr;
  GetCountFn get_count = nullptr;
  GetHandleFn get_handle = nullptr;
  GetNameFn get_name = nullptr;
  GetMemoryFn get_memory = nullptr;
  GetUtilizationFn get_utilization = nullptr;
  GetProcessesFn get_processes = nullptr;
  ErrorStringFn error_string = nullptr;

  std::string error(NvmlReturn r) const {
    const char* s = error_string ? error_string(r) : nullptr;
    return s ? std::string(s) : "NVML error " + std::to_string(r);
  }
};

StatusOr<std::unique_ptr<Nvml>> load_nvml(const std::string& library) {
  auto nvml = std::make_unique<Nvml>();
  StatusOr<SharedLibrary> lib = SharedLibrary::open(library, "NVML");
  if (!lib.ok()) {
    // The message names the library and dlerror's reason after "NVML: ".
    std::string why = lib.status().message();
    why = why.substr(why.find(" could not be loaded (") + 22);
    return unavailable("no NVIDIA driver: " + library + " not found (" + why);
  }
  nvml->library = std::move(*lib);
  const SharedLibrary& h = nvml->library;
  ZT_RETURN_IF_ERROR(h.bind("nvmlInit_v2", &nvml->init));
  ZT_RETURN_IF_ERROR(h.bind("nvmlShutdown", &nvml->shutdown));
  ZT_RETURN_IF_ERROR(h.bind("nvmlErrorString", &nvml->error_string));
  ZT_RETURN_IF_ERROR(h.bind("nvmlDeviceGetCount_v2", &nvml->get_count));
  ZT_RETURN_IF_ERROR(h.bind("nvmlDeviceGetHandleByIndex_v2", &nvml->get_handle));
  ZT_RETURN_IF_ERROR(h.bind("nvmlDeviceGetName", &nvml->get_name));
  ZT_RETURN_IF_ERROR(h.bind("nvmlDeviceGetMemoryInfo", &nvml->get_memory));
  ZT_RETURN_IF_ERROR(h.bind("nvmlDeviceGetUtilizationRates", &nvml->get_utilization));
  // _v3 since driver 510; _v2 writes the same layout on older drivers.
  if (!h.bind("nvmlDeviceGetComputeRunningProcesses_v3", &nvml->get_processes).ok())
    ZT_RETURN_IF_ERROR(h.bind("nvmlDeviceGetComputeRunningProcesses_v2", &nvml->get_processes));
  return nvml;
}

// Compute processes; nullopt when NVML fails to list them.
std::optional<std::vector<GpuProcess>> processes(const Nvml& nvml, NvmlDevice dev) {
  // The count can grow between the sizing call and the fetch: retry a few times.
  std::vector<NvmlProcessInfo> infos(8);
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned int count = static_cast<unsigned int>(infos.size());
    const NvmlReturn r = nvml.get_processes(dev, &count, infos.data());
    if (r == kNvmlInsufficientSize) {
      infos.resize(count + 8);
      continue;
    }
    if (r != kNvmlSuccess) return std::nullopt;
    std::vector<GpuProcess> out;
    for (unsigned int i = 0; i < count && i < infos.size(); ++i) {
      const bool known = infos[i].used_gpu_memory != kNvmlValueNotAvailable;
      out.push_back({infos[i].pid, known, known ? infos[i].used_gpu_memory : 0});
    }
    return out;
  }
  return std::nullopt;
}

StatusOr<GpuInfo> device_info(const Nvml& nvml, unsigned int index) {
  NvmlDevice dev = nullptr;
  NvmlReturn r = nvml.get_handle(index, &dev);
  if (r != kNvmlSuccess) return unavailable("GPU " + std::to_string(index) + ": " + nvml.error(r));
  GpuInfo g;
  g.index = static_cast<int>(index);
  char name[kNvmlDeviceNameBufferSize] = {};
  if (nvml.get_name(dev, name, sizeof name) == kNvmlSuccess) g.name = name;
  NvmlMemory mem{};
  if ((r = nvml.get_memory(dev, &mem)) != kNvmlSuccess)
    return unavailable("GPU " + std::to_string(index) + " memory: " + nvml.error(r));
  g.memory_used = mem.used;
  g.memory_total = mem.total;
  NvmlUtilization util{};
  if (nvml.get_utilization(dev, &util) == kNvmlSuccess) {
    g.utilization_known = true;
    g.utilization_gpu = util.gpu;
    g.utilization_memory = util.memory;
  }
  if (std::optional<std::vector<GpuProcess>> p = processes(nvml, dev)) {
    g.processes_known = true;
    g.processes = std::move(*p);
  }
  return g;
}

}  // namespace

StatusOr<std::vector<GpuInfo>> query_gpus(const std::string& library) {
  ZT_ASSIGN_OR_RETURN(std::unique_ptr<Nvml> nvml, load_nvml(library));
  NvmlReturn r = nvml->init();
  if (r != kNvmlSuccess)
    return unavailable("NVML init failed: " + nvml->error(r) + " (is the NVIDIA driver loaded?)");
  std::vector<GpuInfo> out;
  unsigned int count = 0;
  Status status = ok_status();
  if ((r = nvml->get_count(&count)) != kNvmlSuccess)
    status = unavailable("NVML device count: " + nvml->error(r));
  for (unsigned int i = 0; status.ok() && i < count; ++i) {
    StatusOr<GpuInfo> g = device_info(*nvml, i);
    if (g.ok())
      out.push_back(std::move(*g));
    else
      status = g.status();
  }
  nvml->shutdown();
  if (!status.ok()) return status;
  return out;
}

std::string format_gpus(const std::vector<GpuInfo>& gpus) {
  constexpr double kMiB = 1024.0 * 1024.0;
  std::ostringstream o;
  if (gpus.empty()) return "no GPUs found (NVML reports 0 devices)\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-3s %-28s %21s %5s %5s\n", "GPU", "name", "memory used/total",
                "util", "mem%");
  o << line;
  for (const GpuInfo& g : gpus) {
    const std::string util = g.utilization_known ? std::to_string(g.utilization_gpu) + "%" : "n/a";
    const std::string mutil =
        g.utilization_known ? std::to_string(g.utilization_memory) + "%" : "n/a";
    std::snprintf(line, sizeof line, "%-3d %-28s %8.0fMiB / %6.0fMiB %5s %5s\n", g.index,
                  g.name.c_str(), g.memory_used / kMiB, g.memory_total / kMiB, util.c_str(),
                  mutil.c_str());
    o << line;
    if (!g.processes_known)
      o << "      compute processes: n/a (NVML could not list them)\n";
    else if (g.processes.empty())
      o << "      no compute processes\n";
    for (const GpuProcess& p : g.processes) {
      if (p.used_known)
        std::snprintf(line, sizeof line, "      pid %-8u %8.0fMiB\n", p.pid, p.used_bytes / kMiB);
      else
        std::snprintf(line, sizeof line, "      pid %-8u      n/a\n", p.pid);
      o << line;
    }
  }
  return o.str();
}

}  // namespace zerotrain::tools
