// CudaDevice (cuda_device.h): the runtime calls behind the Device seam.
#include "device/cuda/cuda_device.h"

#include <cstdlib>
#include <cstring>

#include "core/log.h"
#include "device/cuda/cuda_ops.h"
#include "device/cuda/cuda_status.h"

namespace zerotrain::device::cuda {
namespace {

class CudaEvent : public Event {
 public:
  explicit CudaEvent(cudaEvent_t e) : e_(e) {}
  ~CudaEvent() override { cudaEventDestroy(e_); }
  Status synchronize() override {
    ZT_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(e_));
    return ok_status();
  }
  bool completed() const override { return cudaEventQuery(e_) == cudaSuccess; }

 private:
  cudaEvent_t e_;
};

bool is_host_pointer(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error of an unknown pointer
    return true;
  }
  return a.type != cudaMemoryTypeDevice;
}

}  // namespace

int visible_gpu_count(std::string* why_none) {
  // Without a driver the runtime returns an error and leaves the count
  // unwritten (../shared/reference/cuda.md §1.1), so start from 0.
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (why_none != nullptr)
      *why_none = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
    return 0;
  }
  if (count == 0 && why_none != nullptr) *why_none = "the driver lists no GPU";
  return count;
}

CudaDevice::CudaDevice(int ordinal) : ordinal_(ordinal) {}

StatusOr<std::unique_ptr<CudaDevice>> CudaDevice::create(int ordinal) {
  std::string why;
  const int n = visible_gpu_count(&why);
  if (n == 0) return unavailable("no CUDA device: " + why);
  if (ordinal < 0 || ordinal >= n)
    return unavailable("cuda:" + std::to_string(ordinal) + " does not exist (" + std::to_string(n) +
                       " visible)");
  std::unique_ptr<CudaDevice> d(new CudaDevice(ordinal));
  ZT_RETURN_IF_ERROR(d->init());
  return d;
}

Status CudaDevice::init() {
  ZT_RETURN_IF_ERROR(make_current());
  cudaDeviceProp prop{};
  ZT_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, ordinal_));
  gpu_name_ = prop.name;
  char bus[32] = {};
  ZT_CUDA_RETURN_IF_ERROR(cudaDeviceGetPCIBusId(bus, sizeof bus, ordinal_));
  pci_bus_id_ = bus;
  ZT_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
  ZT_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&comm_, cudaStreamNonBlocking));
  ZT_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
  ZT_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&order_event_, cudaEventDisableTiming));
  // Keep freed blocks in the pool (a caching allocator): the default
  // threshold 0 returns memory to the driver at every synchronization.
  cudaMemPool_t pool = nullptr;
  ZT_CUDA_RETURN_IF_ERROR(cudaDeviceGetDefaultMemPool(&pool, ordinal_));
  uint64_t keep = UINT64_MAX;
  ZT_CUDA_RETURN_IF_ERROR(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  ZT_ASSIGN_OR_RETURN(ops_, CudaOps::create(*this));
  return ok_status();
}

CudaDevice::~CudaDevice() {
  if (compute_ != nullptr) cudaDeviceSynchronize();
  ops_.reset();
  if (order_event_ != nullptr) cudaEventDestroy(order_event_);
  for (cudaStream_t s : {compute_, comm_, copy_stream_})
    if (s != nullptr) cudaStreamDestroy(s);
}

const Ops& CudaDevice::ops() const { return *ops_; }

Status CudaDevice::make_current() const {
  ZT_CUDA_RETURN_IF_ERROR(cudaSetDevice(ordinal_));
  return ok_status();
}

Status CudaDevice::copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return ok_status();
  ZT_RETURN_IF_ERROR(make_current());
  ZT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, compute_));
  // A copy touching host memory returns once the bytes are there (device.h).
  if (is_host_pointer(dst) || is_host_pointer(src))
    ZT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(compute_));
  return ok_status();
}

Status CudaDevice::fill_zero(void* dst, size_t bytes) {
  if (bytes == 0) return ok_status();
  ZT_RETURN_IF_ERROR(make_current());
  if (is_host_pointer(dst)) {
    // Host memory may still be the target of a copy on the compute stream.
    ZT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(compute_));
    std::memset(dst, 0, bytes);
    return ok_status();
  }
  ZT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dst, 0, bytes, compute_));
  return ok_status();
}

StatusOr<std::unique_ptr<Event>> CudaDevice::record_event() { return record_event_on(compute_); }

StatusOr<std::unique_ptr<Event>> CudaDevice::record_event_on(cudaStream_t stream) {
  ZT_RETURN_IF_ERROR(make_current());
  cudaEvent_t e = nullptr;
  ZT_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  auto event = std::make_unique<CudaEvent>(e);
  ZT_CUDA_RETURN_IF_ERROR(cudaEventRecord(e, stream));
  return std::unique_ptr<Event>(std::move(event));
}

Status CudaDevice::stream_wait(cudaStream_t waiter, cudaStream_t producer) {
  if (waiter == producer) return ok_status();
  std::lock_guard<std::mutex> lock(order_mu_);
  // cudaStreamWaitEvent captures the event's state at the call, so one
  // event may be re-recorded for the next pair.
  ZT_CUDA_RETURN_IF_ERROR(cudaEventRecord(order_event_, producer));
  ZT_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(waiter, order_event_, 0));
  return ok_status();
}

Status CudaDevice::synchronize() {
  ZT_RETURN_IF_ERROR(make_current());
  for (cudaStream_t s : {compute_, comm_, copy_stream_})
    ZT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
  return ok_status();
}

void* CudaDevice::raw_allocate(size_t bytes) {
  if (!make_current().ok()) return nullptr;
  void* p = nullptr;
  // Stream-ordered on the compute stream; zeroed there (Buffer's contract).
  if (cudaMallocAsync(&p, bytes, compute_) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  if (cudaMemsetAsync(p, 0, bytes, compute_) != cudaSuccess) {
    cudaGetLastError();
    cudaFreeAsync(p, compute_);
    return nullptr;
  }
  return p;
}

void CudaDevice::raw_free(void* p, size_t) {
  if (!make_current().ok()) return;
  // The memory may still be in use by a collective on the comm stream or a
  // prefetch on the copy stream: free it after both.
  (void)stream_wait(compute_, comm_);
  (void)stream_wait(compute_, copy_stream_);
  if (cudaFreeAsync(p, compute_) != cudaSuccess) {
    cudaGetLastError();
    log::warn("cuda: freeing device memory on ", name(), " failed");
  }
}

void* CudaDevice::raw_allocate_host(size_t bytes, bool pin, bool* pinned) {
  *pinned = false;
  if (pin && make_current().ok()) {
    void* p = nullptr;
    if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) == cudaSuccess) {
      std::memset(p, 0, bytes);
      *pinned = true;
      return p;
    }
    cudaGetLastError();
  }
  const size_t page = 4096;
  void* p = std::aligned_alloc(page, (bytes + page - 1) / page * page);
  if (p != nullptr) std::memset(p, 0, bytes);
  return p;
}

void CudaDevice::raw_free_host(void* p, size_t, bool pinned) {
  if (pinned) {
    // A copy from or into it may still be queued.
    cudaStreamSynchronize(compute_);
    cudaStreamSynchronize(copy_stream_);
    cudaFreeHost(p);
    return;
  }
  std::free(p);
}

}  // namespace zerotrain::device::cuda
