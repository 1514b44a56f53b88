// A stand-in libnvidia-ml for tests: three devices with fixed memory,
// utilisation and compute processes, exported with NVML's C names and the
// nvmlProcessInfo_v2_t layout the real driver writes through _v3.
#include <cstring>

namespace {
struct Memory {
  unsigned long long total, free, used;
};
struct Utilization {
  unsigned int gpu, memory;
};
struct ProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
};
constexpr int kSuccess = 0, kInvalidArgument = 2, kInsufficientSize = 7;
constexpr unsigned long long kMiB = 1024ULL * 1024ULL;
}  // namespace

extern "C" {
int nvmlInit_v2() { return kSuccess; }
int nvmlShutdown() { return kSuccess; }
const char* nvmlErrorString(int r) { return r == kSuccess ? "Success" : "Fake error"; }
int nvmlDeviceGetCount_v2(unsigned int* n) {
  *n = 3;
  return kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void** dev) {
  if (i >= 3) return kInvalidArgument;
  *dev = reinterpret_cast<void*>(static_cast<unsigned long>(i + 1));
  return kSuccess;
}
static unsigned index_of(void* dev) {
  return static_cast<unsigned>(reinterpret_cast<unsigned long>(dev)) - 1;
}
int nvmlDeviceGetName(void* dev, char* name, unsigned int len) {
  const char* names[] = {"Fake H200", "Fake A100", "Fake L4"};
  std::strncpy(name, names[index_of(dev)], len);
  return kSuccess;
}
int nvmlDeviceGetMemoryInfo(void* dev, Memory* m) {
  const unsigned i = index_of(dev);
  m->total = 1000 * kMiB;
  m->used = (i == 0 ? 300 : 0) * kMiB;
  m->free = m->total - m->used;
  return kSuccess;
}
int nvmlDeviceGetUtilizationRates(void* dev, Utilization* u) {
  u->gpu = index_of(dev) == 0 ? 42 : 0;
  u->memory = index_of(dev) == 0 ? 17 : 0;
  return kSuccess;
}
// Device 0 runs two processes (the second's usage not available); asks for
// room for both first, as NVML does, when given too little. Device 1 runs
// none; device 2 fails to list them (NVML_ERROR_UNKNOWN).
int nvmlDeviceGetComputeRunningProcesses_v3(void* dev, unsigned int* count, ProcessInfo* out) {
  if (index_of(dev) == 2) return 999;
  if (index_of(dev) != 0) {
    *count = 0;
    return kSuccess;
  }
  if (*count < 2) {
    *count = 2;
    return kInsufficientSize;
  }
  *count = 2;
  out[0] = {4242, 200 * kMiB, 0xFFFFFFFFu, 0xFFFFFFFFu};
  out[1] = {4343, ~0ULL, 0xFFFFFFFFu, 0xFFFFFFFFu};
  return kSuccess;
}
}
