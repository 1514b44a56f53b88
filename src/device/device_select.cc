// Which device the process trains on: the default device, the --device /
// ZEROTRAIN_DEVICE choice, and the CUDA backend's presence (device.h).
#include <atomic>
#include <mutex>
#include <string>

#include "core/env.h"
#include "core/log.h"
#include "device/cpu/cpu_device.h"
#include "device/device.h"
#ifdef ZEROTRAIN_HAVE_CUDA
#include "device/cuda/cuda_device.h"
#endif

namespace zerotrain::device {
namespace {

std::atomic<Device*> g_default{nullptr};
std::mutex g_select_mu;

}  // namespace

Device& default_device() {
  Device* d = g_default.load();
  return d != nullptr ? *d : cpu::cpu_device();
}

StatusOr<DeviceChoice> parse_device_choice(std::string_view text) {
  if (text == "auto") return DeviceChoice::kAuto;
  if (text == "cpu") return DeviceChoice::kCpu;
  if (text == "cuda") return DeviceChoice::kCuda;
  return invalid_argument("device \"" + std::string(text) + "\": expected auto, cpu or cuda");
}

bool cuda_built() {
#ifdef ZEROTRAIN_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int cuda_device_count(std::string* why_none) {
#ifdef ZEROTRAIN_HAVE_CUDA
  return cuda::visible_gpu_count(why_none);
#else
  if (why_none != nullptr)
    *why_none = "this build has no CUDA backend (built with ZEROTRAIN_CUDA=OFF or without nvcc)";
  return 0;
#endif
}

StatusOr<std::unique_ptr<Device>> make_device(DeviceType type, int ordinal) {
  if (type == DeviceType::kCpu) return std::unique_ptr<Device>(new cpu::CpuDevice());
#ifdef ZEROTRAIN_HAVE_CUDA
  ZT_ASSIGN_OR_RETURN(std::unique_ptr<cuda::CudaDevice> d, cuda::CudaDevice::create(ordinal));
  return std::unique_ptr<Device>(std::move(d));
#else
  std::string why;
  cuda_device_count(&why);
  return unavailable("no CUDA device: " + why);
#endif
}

StatusOr<Device*> select_default_device(DeviceChoice choice, int local_rank) {
  std::lock_guard<std::mutex> lock(g_select_mu);
  if (Device* d = g_default.load()) return d;
  std::string why;
  const int gpus = cuda_device_count(&why);
  if (choice == DeviceChoice::kCpu || (choice == DeviceChoice::kAuto && gpus == 0)) {
    g_default = &cpu::cpu_device();
    return g_default.load();
  }
  if (gpus == 0) return unavailable("--device cuda: no GPU for this process: " + why);
  // The launcher gives each worker one GPU (CUDA_VISIBLE_DEVICES); a process
  // that sees several takes its local rank's.
  const int ordinal = gpus == 1 ? 0 : local_rank % gpus;
  ZT_ASSIGN_OR_RETURN(std::unique_ptr<Device> made, make_device(DeviceType::kCuda, ordinal));
  if (std::optional<std::string> v = env::get("ZEROTRAIN_DEVICE_MEMORY")) {
    ZT_ASSIGN_OR_RETURN(int64_t cap, parse_bytes(*v));
    made->set_capacity(cap);
  }
  g_default = made.release();  // never destroyed: buffers may outlive static destruction
  return g_default.load();
}

}  // namespace zerotrain::device
