// Device helpers shared by layers.cu, norms.cu and crossentropy.cu: warp
// sums, stream-ordered scratch memory, and the range check of user ids
// (token ids, targets) that those ops turn into InvalidArgument.
//
//   float total = warp_sum(partial);                  // every lane gets the same bits
//   ZT_RETURN_IF_ERROR(with_scratch(stream, bytes, [&](void* p) { ...; return ok_status(); }));
//   ZT_RETURN_IF_ERROR(first_out_of_range(stream, ids, n, 0, V, &index, &id));  // syncs
//
// Thread-safety: as kernels.h.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/status.h"
#include "device/cuda/cuda_status.h"
#include "device/cuda/launch_geometry.h"

namespace zerotrain::device::cuda::kernels {

// Butterfly sum: every lane adds the same pairs in the same order (float
// addition commutes), so all 32 lanes end with identical bits.
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Runs fn(p) with `bytes` of stream-ordered scratch at p, freed on the
// stream afterwards whether fn failed or not; fn's error comes first.
template <typename Fn>
Status with_scratch(cudaStream_t stream, size_t bytes, Fn&& fn) {
  void* p = nullptr;
  ZT_CUDA_RETURN_IF_ERROR(cudaMallocAsync(&p, bytes, stream));
  const Status s = fn(p);
  const cudaError_t freed = cudaFreeAsync(p, stream);
  ZT_RETURN_IF_ERROR(s);
  return cuda_status(freed, "cudaFreeAsync(scratch)");
}

// atomicMin of the flat index of every id outside [lo, hi). The stride
// loop visits a thread's indices in increasing order, so its first hit is
// its smallest and it stops there.
template <typename Id>
__global__ void first_out_of_range_kernel(unsigned long long* first, const Id* ids, int64_t n,
                                          int64_t lo, int64_t hi) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const int64_t id = ids[i];
    if (id < lo || id >= hi) {
      atomicMin(first, static_cast<unsigned long long>(i));
      return;
    }
  }
}

// *index = the first i with ids[i] outside [lo, hi) and *value = ids[i];
// *index = -1 when there is none. Waits for `stream` (the caller turns a
// hit into its op's InvalidArgument before launching anything that would
// index with the id).
inline Status first_out_of_range(cudaStream_t stream, const int32_t* ids, int64_t n, int64_t lo,
                                 int64_t hi, int64_t* index, int32_t* value) {
  *index = -1;
  const Grid g = grid_1d(n);
  if (g.blocks == 0) return ok_status();
  unsigned long long first = ~0ull;
  ZT_RETURN_IF_ERROR(with_scratch(stream, sizeof(first), [&](void* p) -> Status {
    auto* d_first = static_cast<unsigned long long*>(p);
    ZT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(d_first, 0xff, sizeof(first), stream));
    first_out_of_range_kernel<<<static_cast<unsigned>(g.blocks), g.threads, 0, stream>>>(
        d_first, ids, n, lo, hi);
    ZT_RETURN_IF_ERROR(check_launch("first_out_of_range_kernel"));
    ZT_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(&first, d_first, sizeof(first), cudaMemcpyDeviceToHost, stream));
    return ok_status();
  }));
  ZT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  if (first == ~0ull) return ok_status();
  *index = static_cast<int64_t>(first);
  ZT_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(value, ids + *index, sizeof(int32_t), cudaMemcpyDeviceToHost, stream));
  ZT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return ok_status();
}

}  // namespace zerotrain::device::cuda::kernels
