// CUDA errors as Status (cuda_status.h).
#include "device/cuda/cuda_status.h"

#include <string>

namespace zerotrain::device::cuda {

Status cuda_status(cudaError_t error, std::string_view what) {
  if (error == cudaSuccess) return ok_status();
  const std::string m = "cuda: " + std::string(what) + ": " + cudaGetErrorName(error) + ": " +
                        cudaGetErrorString(error);
  if (error == cudaErrorMemoryAllocation) return resource_exhausted(m);
  if (error == cudaErrorInsufficientDriver || error == cudaErrorNoDevice) return unavailable(m);
  return internal_error(m);
}

Status check_launch(std::string_view kernel) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return ok_status();
  return cuda_status(e, "launching " + std::string(kernel));
}

}  // namespace zerotrain::device::cuda
