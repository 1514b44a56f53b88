// The CUDA optimizer steps (kernels.h, "optimizer.cu"): fused Adam/AdamW
// over fp32, fp16 or bf16 grads with an optional fp16/bf16 copy of the new
// weights, and SGD. Each element runs element_math.h's adam_element /
// sgd_element, the CPU portable kernels' expressions with every product
// and sum rounded separately (no FMA contraction), so the parameters,
// moments and copies are bit-identical to device/cpu/optimizer_kernels.cc.
// Element-wise: no reduction, so any grid gives the same bits.
#include <string>

#include "device/cuda/cuda_status.h"
#include "device/cuda/element_math.h"
#include "device/cuda/kernels/kernels.h"
#include "device/cuda/launch_geometry.h"

namespace zerotrain::device::cuda::kernels {
namespace {

// No copy of the new weights.
struct NoCopy {
  using T = uint16_t;
  static __device__ void store(T*, int64_t, float) {}
};

template <typename G, typename C>
__global__ void adam_kernel(AdamStep step, float* params, const typename G::T* grads,
                            float* exp_avg, float* exp_avg_sq, typename C::T* copy, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const AdamState s =
        adam_element(step, G::load(grads, i), AdamState{params[i], exp_avg[i], exp_avg_sq[i]});
    params[i] = s.param;
    exp_avg[i] = s.exp_avg;
    exp_avg_sq[i] = s.exp_avg_sq;
    C::store(copy, i, s.param);
  }
}

__global__ void sgd_kernel(SgdStep step, float* params, const float* grads, float* momentum_buffer,
                           int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    float* momentum = step.use_momentum ? momentum_buffer + i : nullptr;
    params[i] = sgd_element(step, params[i], grads[i], momentum);
  }
}

template <typename G, typename C>
Status launch_adam(cudaStream_t stream, const AdamStep& step, float* params, const void* grads,
                   float* exp_avg, float* exp_avg_sq, void* copy, int64_t n) {
  const Grid g = grid_1d(n);
  adam_kernel<G, C><<<static_cast<unsigned>(g.blocks), g.threads, 0, stream>>>(
      step, params, static_cast<const typename G::T*>(grads), exp_avg, exp_avg_sq,
      static_cast<typename C::T*>(copy), n);
  return check_launch("adam_kernel");
}

template <typename G>
Status launch_adam_copy(cudaStream_t stream, const AdamStep& step, float* params, const void* grads,
                        float* exp_avg, float* exp_avg_sq, void* copy, DType copy_dtype,
                        int64_t n) {
  if (copy == nullptr)
    return launch_adam<G, NoCopy>(stream, step, params, grads, exp_avg, exp_avg_sq, copy, n);
  if (copy_dtype == DType::kFloat16)
    return launch_adam<G, Fp16Elem>(stream, step, params, grads, exp_avg, exp_avg_sq, copy, n);
  return launch_adam<G, Bf16Elem>(stream, step, params, grads, exp_avg, exp_avg_sq, copy, n);
}

}  // namespace

Status adam(cudaStream_t stream, const AdamStep& step, float* params, const void* grads,
            DType grad_dtype, float* exp_avg, float* exp_avg_sq, void* copy, DType copy_dtype,
            size_t n) {
  // The CPU writes bf16 for any copy dtype but fp16; an fp32 copy is a
  // caller's mistake, named here rather than written as bf16 bits.
  if (copy != nullptr && copy_dtype == DType::kFloat32)
    return invalid_argument("adam: the weight copy must be fp16 or bf16, got fp32");
  if (n == 0) return ok_status();
  const auto count = static_cast<int64_t>(n);
  switch (grad_dtype) {
    case DType::kFloat32:
      return launch_adam_copy<F32Elem>(stream, step, params, grads, exp_avg, exp_avg_sq, copy,
                                       copy_dtype, count);
    case DType::kFloat16:
      return launch_adam_copy<Fp16Elem>(stream, step, params, grads, exp_avg, exp_avg_sq, copy,
                                        copy_dtype, count);
    case DType::kBFloat16:
      return launch_adam_copy<Bf16Elem>(stream, step, params, grads, exp_avg, exp_avg_sq, copy,
                                        copy_dtype, count);
  }
  return invalid_argument("adam: unknown grad dtype");
}

Status sgd(cudaStream_t stream, const SgdStep& step, float* params, const float* grads,
           float* momentum_buffer, size_t n) {
  if (step.use_momentum && momentum_buffer == nullptr && n > 0)
    return invalid_argument("sgd: momentum needs a momentum buffer");
  const Grid g = grid_1d(static_cast<int64_t>(n));
  if (g.blocks == 0) return ok_status();
  sgd_kernel<<<static_cast<unsigned>(g.blocks), g.threads, 0, stream>>>(
      step, params, grads, momentum_buffer, static_cast<int64_t>(n));
  return check_launch("sgd_kernel");
}

}  // namespace zerotrain::device::cuda::kernels
