// Device: where one rank's tensors live and its kernels run. It allocates
// device memory (with a capacity, so offload is tested against a device
// that is really too small) and host memory for offloaded states (pinned
// when asked), copies between them, orders work on streams and events, and
// hands out the Ops table of its kernels. Code above device/ holds device
// pointers but never dereferences them: it calls ops() or copy() (see
// docs/architecture.md, "the device seam").
//
//   device::Device& d = device::cpu_device();
//   ZT_ASSIGN_OR_RETURN(Buffer m, d.allocate(n * 4, MemoryCategory::kMasterWeights, "master"));
//   ZT_RETURN_IF_ERROR(d.ops().convert(m.tensor(DType::kFloat32), w16.tensor(DType::kBFloat16)));
//   ZT_RETURN_IF_ERROR(copy_to_host(m.tensor(DType::kFloat32), host.data()));
//
// Streams (named note "device streams"): a device has a compute, a
// communication and a copy stream. Ops run on the compute stream; copy()
// runs on the compute stream and, when either side is host memory, returns
// once the bytes have arrived (so host code may read them). A backend that
// moves device memory on the communication stream records an Event on the
// compute stream first and makes the compute stream wait on one after.
// On the CPU device every stream is the calling thread: work is done when
// the call returns and events are always complete.
//
// Thread-safety: allocate/free and the usage counters are thread-safe;
// ops and copies follow their stream (one host thread per stream).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor.h"

namespace zerotrain::device {

class Ops;
class Device;

enum class DeviceType { kCpu, kCuda };

// What an allocation holds: for the usage report and out-of-memory errors.
enum class MemoryCategory {
  kParameters,
  kGradients,
  kMasterWeights,
  kOptimizerStates,
  kActivations,
  kBuffers,  // staging, gather pools, transient step arrays
  kOther,
};
inline constexpr int kMemoryCategories = 7;
std::string_view category_name(MemoryCategory c);  // "parameters", "optimizer states", ...

// Bytes in use by category, and the high-water mark of their total.
struct MemoryUsage {
  std::array<int64_t, kMemoryCategories> bytes{};
  int64_t peak = 0;
  int64_t of(MemoryCategory c) const { return bytes[static_cast<int>(c)]; }
  int64_t total() const;
  std::string to_string() const;  // "parameters 7.1 MiB, activations 31.0 MiB" (non-zero ones)
};

// Owning memory from a Device: device memory, or host memory for offload.
// Zeroed at allocation; freed (and uncounted) on destruction. Move-only.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  bool empty() const { return bytes_ == 0; }
  bool on_host() const { return host_; }
  bool pinned() const { return pinned_; }
  MemoryCategory category() const { return category_; }
  Device* device() const { return device_; }
  // The whole buffer as elements of dtype (bytes() / dtype_size of them),
  // tagged with the device unless it is host memory.
  Tensor tensor(DType dtype) const;
  // Elements [offset, offset + count) of it as dtype.
  Tensor tensor(DType dtype, size_t offset, size_t count) const;
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  void reset();

 private:
  friend class Device;
  Device* device_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  MemoryCategory category_ = MemoryCategory::kOther;
  bool host_ = false, pinned_ = false;
};

// An ordering point on a stream (CPU: always complete).
class Event {
 public:
  virtual ~Event() = default;
  virtual Status synchronize() = 0;  // the host waits for it
  virtual bool completed() const = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  virtual DeviceType type() const = 0;
  virtual std::string name() const = 0;  // "cpu", "cuda:0"
  // The kernels on this device's memory (compute stream).
  virtual const Ops& ops() const = 0;

  // `bytes` of zeroed device memory, 64-byte aligned. Beyond the capacity:
  // ResourceExhausted naming `what`, its category, the use by category and
  // what `zerotrain estimate` says would fit (set_oom_advice).
  StatusOr<Buffer> allocate(size_t bytes, MemoryCategory category, std::string_view what);
  // Zeroed host memory for offloaded states, page-aligned; pinned
  // (page-locked) when pin and allowed, else pageable with one warning.
  // Not counted against the capacity.
  StatusOr<Buffer> allocate_host(size_t bytes, bool pin, MemoryCategory category,
                                 std::string_view what);

  // bytes from src to dst, either in this device's memory or host memory
  // (see "device streams"); the ranges must not overlap unless equal.
  virtual Status copy(void* dst, const void* src, size_t bytes) = 0;
  // dst[0, bytes) = 0 (device or host memory).
  virtual Status fill_zero(void* dst, size_t bytes) = 0;
  // The host address of device memory for backends that move host memory
  // (Gloo), or null when the device's memory is not host-addressable.
  virtual void* host_address(const void* p) const = 0;
  virtual StatusOr<std::unique_ptr<Event>> record_event() = 0;  // on the compute stream
  virtual Status synchronize() = 0;                             // every stream of the device

  // Capacity in bytes of device memory (0: unlimited).
  int64_t capacity() const { return capacity_.load(); }
  void set_capacity(int64_t bytes) { capacity_ = bytes; }
  MemoryUsage usage() const;
  int64_t pinned_bytes() const { return pinned_.load(); }
  // Called to explain an out-of-memory error: what `zerotrain estimate`
  // says fits (the engine sets it for its model and world size).
  void set_oom_advice(std::function<std::string()> advice);

 protected:
  Device() = default;
  // Zeroed memory or null; the base counts it.
  virtual void* raw_allocate(size_t bytes) = 0;
  virtual void raw_free(void* p, size_t bytes) = 0;
  // Host memory (see allocate_host); *pinned says whether pinning held.
  virtual void* raw_allocate_host(size_t bytes, bool pin, bool* pinned) = 0;
  virtual void raw_free_host(void* p, size_t bytes, bool pinned) = 0;

 private:
  friend class Buffer;
  void release(Buffer& b);
  std::string out_of_memory(size_t bytes, MemoryCategory category, std::string_view what) const;

  std::atomic<int64_t> capacity_{0};
  std::atomic<int64_t> pinned_{0};
  mutable std::mutex mu_;  // guards usage_ and advice_
  MemoryUsage usage_;
  std::function<std::string()> advice_;
};

// The process's default device, with the capacity ZEROTRAIN_DEVICE_MEMORY
// gives: the CPU device until select_default_device chose another.
Device& default_device();

// Which device a process trains on (`zerotrain train --device`,
// ZEROTRAIN_DEVICE): kAuto takes this process's GPU when the build has the
// CUDA backend and the driver shows one, else the CPU.
enum class DeviceChoice { kAuto, kCpu, kCuda };
StatusOr<DeviceChoice> parse_device_choice(std::string_view text);  // "auto", "cpu", "cuda"
// Makes default_device() the chosen device (once, before any use of it):
// kCuda without a GPU or without the backend is Unavailable with the reason.
// `local_rank` picks the GPU when the process sees several (its launcher
// narrowed CUDA_VISIBLE_DEVICES to one otherwise). Returns the device.
StatusOr<Device*> select_default_device(DeviceChoice choice, int local_rank);

// Whether this build has the CUDA backend (device/cuda/).
bool cuda_built();
// GPUs this process can use: 0 without the backend, a driver or a GPU, and
// then *why_none (when given) says which.
int cuda_device_count(std::string* why_none = nullptr);
// A new device of `type`: a CPU device, or GPU `ordinal` (Unavailable with
// the reason when there is none).
StatusOr<std::unique_ptr<Device>> make_device(DeviceType type, int ordinal = 0);
// The CPU kernels on host memory (offloaded states, host tensors).
const Ops& host_ops();
// The Ops that run on t's memory: its device's, or host_ops() for host
// memory (offloaded states).
const Ops& ops_for(const ConstTensor& t);
// "512MiB", "1.5GiB", "2G", "300MB", "1048576" (bytes): KiB/MiB/GiB and
// K/M/G are powers of 1024, KB/MB/GB powers of 1000. InvalidArgument
// naming the text otherwise.
StatusOr<int64_t> parse_bytes(std::string_view text);
// Copies between a tensor (device or host) and host memory, in bytes of
// the tensor's dtype: host_dst[0, src.size_bytes()) = src; dst = host_src.
Status copy_to_host(const ConstTensor& src, void* host_dst);
Status copy_from_host(const void* host_src, const Tensor& dst);
// dst = src, same dtype and length, either side device or host memory.
Status copy(const ConstTensor& src, const Tensor& dst);

// The host's compute threads for this process (the CPU ops and the host
// optimizer): max(1, cores / local_ranks) unless OMP_NUM_THREADS is set;
// local_ranks 0 means LOCAL_WORLD_SIZE, else `world_size`. Returns the
// thread count now in effect (device/cpu/threads.h).
int configure_host_threads(int local_ranks, int world_size);

// "512 B" / "4.0 KiB" / "12.0 MiB" / "1.50 GiB".
std::string format_bytes(int64_t bytes);

}  // namespace zerotrain::device
