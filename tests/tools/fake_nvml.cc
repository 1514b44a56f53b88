// A stand-in libnvidia-ml for tests: four devices with fixed memory,
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
  *n = 4;
  return kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void** dev) {
  if (i >= 4) return kInvalidArgument;
  *dev = reinterpret_cast<void*>(static_cast<unsigned long>(i + 1));
  return kSuccess;
}
static unsigned index_of(void* dev) {
  return static_cast<unsigned>(reinterpret_cast<unsigned long>(dev)) - 1;
}
int nvmlDeviceGetName(void* dev, char* name, unsigned int len) {
  const char* names[] = {"Fake H200", "Fake A100", "Fake L4", "Fake T4"};
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
// Device 0 runs two processes (the second's usage not available); device 1
// runs 20, more than a first call makes room for; device 2 fails to list
// them (NVML_ERROR_UNKNOWN); device 3 runs none. Too small a count gets
// NVML_ERROR_INSUFFICIENT_SIZE with the count needed, as NVML does.
int nvmlDeviceGetComputeRunningProcesses_v3(void* dev, unsigned int* count, ProcessInfo* out) {
  const unsigned i = index_of(dev);
  if (i == 2) return 999;
  const unsigned n = i == 0 ? 2 : i == 1 ? 20 : 0;
  if (*count < n) {
    *count = n;
    return kInsufficientSize;
  }
  *count = n;
  if (i == 0) {
    out[0] = {4242, 200 * kMiB, 0xFFFFFFFFu, 0xFFFFFFFFu};
    out[1] = {4343, ~0ULL, 0xFFFFFFFFu, 0xFFFFFFFFu};
  }
  for (unsigned k = 0; i == 1 && k < n; ++k) out[k] = {5000 + k, (k + 1) * kMiB, 0, 0};
  return kSuccess;
}
}
