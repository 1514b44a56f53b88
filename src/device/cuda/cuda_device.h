// CudaDevice: the Device on one NVIDIA GPU through the CUDA runtime.
//   - Memory: the stream-ordered allocator (cudaMallocAsync on the
//     compute stream, from the device's default pool with its release
//     threshold raised so freed blocks are cached, never managed memory),
//     zeroed at allocation; the Device base counts it against the capacity.
//   - Host memory for offload: pinned with cudaHostAlloc (pageable, with the
//     base's warning, when pinning fails or is not asked).
//   - Streams: compute (every op and copy()), communication (NCCL, or the
//     host staging of the Gloo path) and copy (offload prefetch); events
//     order them (device.h, "device streams").
//   - Ops: CudaOps (cuda_ops.h): the kernels of kernels/ and cuBLASLt.
//
//   ZT_ASSIGN_OR_RETURN(std::unique_ptr<CudaDevice> d, CudaDevice::create(0));
//   cudaStream_t s = d->comm_stream();   // comm/nccl/ enqueues its collectives here
//
// Thread-safety: as Device; the streams are shared, so enqueueing from two
// host threads onto one stream is ordered only by the host.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "device/device.h"

namespace zerotrain::device::cuda {

class CudaOps;

// GPUs visible to this process (0 without a driver or a GPU; *why_none
// then says which, from the runtime's own error).
int visible_gpu_count(std::string* why_none);

class CudaDevice : public Device {
 public:
  // GPU `ordinal` of the visible ones; Unavailable naming the reason when
  // there is none (no driver, no GPU, ordinal out of range).
  static StatusOr<std::unique_ptr<CudaDevice>> create(int ordinal);
  ~CudaDevice() override;

  DeviceType type() const override { return DeviceType::kCuda; }
  std::string name() const override { return "cuda:" + std::to_string(ordinal_); }
  const Ops& ops() const override;
  Status copy(void* dst, const void* src, size_t bytes) override;
  Status fill_zero(void* dst, size_t bytes) override;
  void* host_address(const void*) const override { return nullptr; }
  StatusOr<std::unique_ptr<Event>> record_event() override;
  Status synchronize() override;

  int ordinal() const { return ordinal_; }
  cudaStream_t compute_stream() const { return compute_; }
  cudaStream_t comm_stream() const { return comm_; }
  cudaStream_t copy_stream() const { return copy_stream_; }
  // Makes this device current on the calling host thread (the runtime's
  // current device is per thread; the comm thread calls it first).
  Status make_current() const;
  // An event recorded on `stream` (compute: record_event()).
  StatusOr<std::unique_ptr<Event>> record_event_on(cudaStream_t stream);
  // `waiter` waits (on the GPU, the host does not) for everything enqueued
  // on `producer` so far.
  Status stream_wait(cudaStream_t waiter, cudaStream_t producer);
  // The GPU's name and PCI bus id ("NVIDIA H200", "0000:19:00.0").
  std::string gpu_name() const { return gpu_name_; }
  std::string pci_bus_id() const { return pci_bus_id_; }

 protected:
  void* raw_allocate(size_t bytes) override;
  void raw_free(void* p, size_t bytes) override;
  void* raw_allocate_host(size_t bytes, bool pin, bool* pinned) override;
  void raw_free_host(void* p, size_t bytes, bool pinned) override;

 private:
  explicit CudaDevice(int ordinal);
  Status init();

  int ordinal_;
  std::string gpu_name_, pci_bus_id_;
  cudaStream_t compute_ = nullptr, comm_ = nullptr, copy_stream_ = nullptr;
  cudaEvent_t order_event_ = nullptr;  // stream_wait's (guarded by order_mu_)
  std::mutex order_mu_;
  std::unique_ptr<CudaOps> ops_;
};

}  // namespace zerotrain::device::cuda
