// The GEMMs' helper kernels (kernels.h, "matmul.cu"): the bias gradient as
// a fixed-order column sum, and the K = 0 GEMM cuBLASLt refuses.
#include <cuda_bf16.h>

#include "device/cuda/cuda_status.h"
#include "device/cuda/element_math.h"
#include "device/cuda/kernels/kernels.h"
#include "device/cuda/launch_geometry.h"

namespace zerotrain::device::cuda::kernels {
namespace {

// Rows per partial sum of the bias gradient: each (column, chunk) is summed
// by one thread in row order, then the chunks in chunk order, so the result
// does not depend on the launch.
constexpr int64_t kRowsPerChunk = 256;
constexpr int kColsPerBlock = 256;

template <typename T>
__device__ float load(const T* p, int64_t i);
template <>
__device__ float load<float>(const float* p, int64_t i) {
  return p[i];
}
template <>
__device__ float load<BFloat16>(const BFloat16* p, int64_t i) {
  return bf16_to_float(p[i].bits);
}

template <typename T>
__global__ void column_partials(float* partial, const T* dout, int64_t rows, int64_t cols) {
  const int64_t col = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t chunk = blockIdx.y;
  if (col >= cols) return;
  const int64_t r0 = chunk * kRowsPerChunk;
  const int64_t r1 = r0 + kRowsPerChunk < rows ? r0 + kRowsPerChunk : rows;
  float s = 0.0f;
  for (int64_t r = r0; r < r1; ++r) s += load(dout, r * cols + col);
  partial[chunk * cols + col] = s;
}

__global__ void add_partials(float* dbias, const float* partial, int64_t chunks, int64_t cols) {
  const int64_t col = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (col >= cols) return;
  float s = 0.0f;
  for (int64_t c = 0; c < chunks; ++c) s += partial[c * cols + col];
  dbias[col] += s;
}

template <typename T>
Status bias_grad_impl(cudaStream_t stream, float* dbias, const T* dout, int64_t rows,
                      int64_t cols) {
  if (rows <= 0 || cols <= 0) return ok_status();
  const int64_t chunks = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  if (chunks > 65535) return invalid_argument("bias_grad: too many rows for one launch");
  float* partial = nullptr;
  ZT_CUDA_RETURN_IF_ERROR(
      cudaMallocAsync(reinterpret_cast<void**>(&partial), chunks * cols * sizeof(float), stream));
  const dim3 grid(static_cast<unsigned>((cols + kColsPerBlock - 1) / kColsPerBlock),
                  static_cast<unsigned>(chunks));
  column_partials<<<grid, kColsPerBlock, 0, stream>>>(partial, dout, rows, cols);
  Status s = check_launch("column_partials");
  if (s.ok()) {
    add_partials<<<static_cast<unsigned>((cols + kColsPerBlock - 1) / kColsPerBlock), kColsPerBlock,
                   0, stream>>>(dbias, partial, chunks, cols);
    s = check_launch("add_partials");
  }
  ZT_CUDA_RETURN_IF_ERROR(cudaFreeAsync(partial, stream));
  return s;
}

// Column-major C[rows, cols] per batch: element (r, c) at b·cols·ldc + c·ldc + r.
__global__ void no_product(void* c, bool c_bf16, int64_t rows, int64_t cols, int64_t ldc,
                           int64_t total, float beta, const float* bias) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i % rows, rest = i / rows;
    const int64_t col = rest % cols, b = rest / cols;
    const int64_t at = b * cols * ldc + col * ldc + r;
    float v = bias != nullptr ? bias[r] : 0.0f;
    if (c_bf16) {
      auto* p = static_cast<uint16_t*>(c);
      if (beta != 0.0f) v += beta * bf16_to_float(p[at]);
      p[at] = bf16_round_bits(v);
    } else {
      auto* p = static_cast<float*>(c);
      if (beta != 0.0f) v += beta * p[at];
      p[at] = v;
    }
  }
}

}  // namespace

Status bias_grad(cudaStream_t stream, float* dbias, const float* dout, int64_t rows, int64_t OC) {
  return bias_grad_impl(stream, dbias, dout, rows, OC);
}

Status bias_grad_bf16(cudaStream_t stream, float* dbias, const BFloat16* dout, int64_t rows,
                      int64_t OC) {
  return bias_grad_impl(stream, dbias, dout, rows, OC);
}

Status gemm_without_product(cudaStream_t stream, void* c, bool c_bf16, int64_t rows, int64_t cols,
                            int64_t ldc, int64_t batch, float beta, const float* bias) {
  const int64_t total = rows * cols * batch;
  const Grid g = grid_1d(total);
  if (g.blocks == 0) return ok_status();
  no_product<<<g.blocks, g.threads, 0, stream>>>(c, c_bf16, rows, cols, ldc, total, beta, bias);
  return check_launch("no_product");
}

}  // namespace zerotrain::device::cuda::kernels
