// CUDA, cuBLAS and NCCL return codes as Status: every runtime call and
// every kernel launch of the CUDA backend goes through these, so a failure
// names the call and the library's own message instead of aborting.
//
//   ZT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(p, 0, n, stream));
//   my_kernel<<<g.blocks, g.threads, 0, stream>>>(...);
//   ZT_RETURN_IF_ERROR(check_launch("my_kernel"));
//
// Thread-safety: pure functions (cudaGetLastError is per host thread).
#pragma once

#include <cuda_runtime.h>

#include <string_view>

#include "core/status.h"

namespace zerotrain::device::cuda {

// ok for cudaSuccess; else Internal (ResourceExhausted for out of memory)
// "cuda: WHAT: <cudaGetErrorName>: <cudaGetErrorString>".
Status cuda_status(cudaError_t error, std::string_view what);
// The launch error of the last kernel launched on this thread, if any.
Status check_launch(std::string_view kernel);

}  // namespace zerotrain::device::cuda

#define ZT_CUDA_RETURN_IF_ERROR(call)                                       \
  do {                                                                      \
    const cudaError_t zt_cuda_error_ = (call);                              \
    if (zt_cuda_error_ != cudaSuccess)                                      \
      return ::zerotrain::device::cuda::cuda_status(zt_cuda_error_, #call); \
  } while (0)
