// CpuDevice: the Device whose memory is this process's RAM and whose ops
// are the CPU kernels (oneDNN GEMMs, OpenMP loops). Every stream is the
// calling thread. Its capacity comes from ZEROTRAIN_DEVICE_MEMORY (or the
// trainer's --device-memory; default unlimited), so offload is exercised
// against a device that really is too small.
//
//   device::Device& d = device::cpu::cpu_device();      // the process's default
//   auto guarded = device::cpu::make_guarded_device();  // see guarded_device.h
//   const device::Ops& ops = device::cpu::host_ops();   // kernels on host memory
//
// Thread-safety: as Device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "device/device.h"

namespace zerotrain::device::cpu {

class CpuDevice : public Device {
 public:
  CpuDevice() = default;
  DeviceType type() const override { return DeviceType::kCpu; }
  std::string name() const override { return "cpu"; }
  const Ops& ops() const override;
  Status copy(void* dst, const void* src, size_t bytes) override;
  Status fill_zero(void* dst, size_t bytes) override;
  void* host_address(const void* p) const override { return const_cast<void*>(p); }
  StatusOr<std::unique_ptr<Event>> record_event() override;
  Status synchronize() override { return ok_status(); }

 protected:
  void* raw_allocate(size_t bytes) override;
  void raw_free(void* p, size_t bytes) override;
  void* raw_allocate_host(size_t bytes, bool pin, bool* pinned) override;
  void raw_free_host(void* p, size_t bytes, bool pinned) override;
};

// The process's default CPU device, created on first use with the
// capacity ZEROTRAIN_DEVICE_MEMORY gives (aborts naming the variable when
// it does not parse).
Device& cpu_device();
// The CPU kernels on host memory: the ops for offloaded states (a CUDA
// device's host partitions run these) and for tensors with no device.
const Ops& host_ops();

}  // namespace zerotrain::device::cpu
