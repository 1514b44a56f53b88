// The LayerNorm and RMSNorm launchers of kernels.h ("layers.cu" section),
// mirroring device/cpu/kernels/layernorm.cc and rmsnorm.cc: fp32 row
// statistics (two-pass variance), the same per-element expressions rounded
// at each operation (element_math.h's *_rn, no FMA, as the CPU build).
//
// Forward: one warp per row. Backward: block b owns the fixed row range
// [b·R, (b+1)·R) (R a function of the row count only): its warps first
// reduce each row's statistics, then each thread walks the range for its
// channels in row order, adding into dinp and summing the dweight/dbias
// partials of the range; a second kernel adds the partials of all blocks
// in a fixed tree. No atomics, so two runs give the same bits.
#include <algorithm>

#include "device/cuda/cuda_status.h"
#include "device/cuda/element_math.h"
#include "device/cuda/kernels/kernels.h"
#include "device/cuda/kernels/layer_util.cuh"

namespace zerotrain::device::cuda::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr float kLayerNormEps = 1e-5f;  // cpu::kLayerNormEps
// Rows per backward block: enough blocks to fill the GPU on GPT-2 shapes,
// and few enough that the partials' second pass stays short.
constexpr int64_t kMaxPartials = 256;
constexpr int64_t kMinRowsPerBlock = 32;
constexpr int64_t kMaxRowsPerBlock = 1024;

int64_t rows_per_block(int64_t rows) {
  return std::clamp((rows + kMaxPartials - 1) / kMaxPartials, kMinRowsPerBlock, kMaxRowsPerBlock);
}

// Forward launches: one warp per row, kWarps rows a block.
unsigned warp_row_grid(int64_t rows) { return static_cast<unsigned>((rows + kWarps - 1) / kWarps); }
__device__ __forceinline__ int64_t warp_row() {
  return static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
}

template <typename Elem>
__global__ void layernorm_forward_kernel(typename Elem::T* out, float* mean, float* rstd,
                                         const float* inp, const float* weight, const float* bias,
                                         int64_t rows, int64_t C) {
  const int64_t row = warp_row();
  if (row >= rows) return;
  const int lane = threadIdx.x % 32;
  const float* x = inp + row * C;
  float sum = 0.0f;
  for (int64_t c = lane; c < C; c += 32) sum = add_rn(sum, x[c]);
  const float m = div_rn(warp_sum(sum), static_cast<float>(C));
  float var = 0.0f;
  for (int64_t c = lane; c < C; c += 32) {
    const float d = sub_rn(x[c], m);
    var = add_rn(var, mul_rn(d, d));
  }
  const float v = div_rn(warp_sum(var), static_cast<float>(C));
  const float s = div_rn(1.0f, sqrt_rn(add_rn(v, kLayerNormEps)));
  for (int64_t c = lane; c < C; c += 32) {
    const float o = add_rn(mul_rn(mul_rn(sub_rn(x[c], m), s), weight[c]), bias[c]);
    Elem::store(out, row * C + c, o);
  }
  if (lane == 0 && mean) mean[row] = m;
  if (lane == 0 && rstd) rstd[row] = s;
}

// out in Elem (fp32, or bf16 rounded once: the bf16 Llama path's GEMM operand).
template <typename Elem>
__global__ void rmsnorm_forward_kernel(typename Elem::T* out, float* rstd, const float* inp,
                                       const float* weight, int64_t rows, int64_t C, float eps) {
  const int64_t row = warp_row();
  if (row >= rows) return;
  const int lane = threadIdx.x % 32;
  const float* x = inp + row * C;
  float ss = 0.0f;
  for (int64_t c = lane; c < C; c += 32) ss = add_rn(ss, mul_rn(x[c], x[c]));
  const float s = div_rn(1.0f, sqrt_rn(add_rn(div_rn(warp_sum(ss), static_cast<float>(C)), eps)));
  for (int64_t c = lane; c < C; c += 32)
    Elem::store(out, row * C + c, mul_rn(weight[c], mul_rn(x[c], s)));
  if (lane == 0 && rstd) rstd[row] = s;
}

// Per row of the block's range, stats[4·r] = mean, rstd, mean(dnorm),
// mean(dnorm·norm); then per channel the dinp update and the partials
// dweight → partials[block, c], dbias → partials[blocks + block, c].
__global__ void layernorm_backward_kernel(float* dinp, float* partials, const float* dout,
                                          const float* inp, const float* weight, const float* mean,
                                          const float* rstd, int64_t rows, int64_t C, int64_t R) {
  extern __shared__ float stats[];
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * R;
  const int64_t r1 = r0 + R < rows ? r0 + R : rows;
  const int lane = threadIdx.x % 32;
  for (int64_t r = r0 + threadIdx.x / 32; r < r1; r += kWarps) {
    const float m = mean[r], s = rstd[r];
    const float* d = dout + r * C;
    const float* x = inp + r * C;
    float a = 0.0f, b = 0.0f;
    for (int64_t c = lane; c < C; c += 32) {
      const float dnorm = mul_rn(weight[c], d[c]);
      a = add_rn(a, dnorm);
      b = add_rn(b, mul_rn(mul_rn(dnorm, sub_rn(x[c], m)), s));
    }
    a = warp_sum(a);
    b = warp_sum(b);
    if (lane == 0) {
      float* st = stats + 4 * (r - r0);
      st[0] = m;
      st[1] = s;
      st[2] = div_rn(a, static_cast<float>(C));
      st[3] = div_rn(b, static_cast<float>(C));
    }
  }
  __syncthreads();
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    const float w = weight[c];
    float pw = 0.0f, pb = 0.0f;
    for (int64_t r = r0; r < r1; ++r) {
      const float* st = stats + 4 * (r - r0);
      const float d = dout[r * C + c];
      const float norm = mul_rn(sub_rn(inp[r * C + c], st[0]), st[1]);
      pb = add_rn(pb, d);
      pw = add_rn(pw, mul_rn(norm, d));
      const float g = sub_rn(sub_rn(mul_rn(w, d), st[2]), mul_rn(norm, st[3]));
      dinp[r * C + c] = add_rn(dinp[r * C + c], mul_rn(g, st[1]));
    }
    partials[blockIdx.x * C + c] = pw;
    partials[(gridDim.x + blockIdx.x) * C + c] = pb;
  }
}

// As layernorm_backward_kernel with stats[2·r] = rstd, rstd²·mean(dout·w·x)
// and one partial (dweight).
__global__ void rmsnorm_backward_kernel(float* dinp, float* partials, const float* dout,
                                        const float* inp, const float* weight, const float* rstd,
                                        int64_t rows, int64_t C, int64_t R) {
  extern __shared__ float stats[];
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * R;
  const int64_t r1 = r0 + R < rows ? r0 + R : rows;
  const int lane = threadIdx.x % 32;
  for (int64_t r = r0 + threadIdx.x / 32; r < r1; r += kWarps) {
    const float s = rstd[r];
    const float* d = dout + r * C;
    const float* x = inp + r * C;
    float dot = 0.0f;
    for (int64_t c = lane; c < C; c += 32) dot = add_rn(dot, mul_rn(mul_rn(d[c], weight[c]), x[c]));
    dot = warp_sum(dot);
    if (lane == 0) {
      stats[2 * (r - r0)] = s;
      stats[2 * (r - r0) + 1] = div_rn(mul_rn(mul_rn(s, s), dot), static_cast<float>(C));
    }
  }
  __syncthreads();
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    const float w = weight[c];
    float pw = 0.0f;
    for (int64_t r = r0; r < r1; ++r) {
      const float s = stats[2 * (r - r0)], k = stats[2 * (r - r0) + 1];
      const float d = dout[r * C + c], x = inp[r * C + c];
      pw = add_rn(pw, mul_rn(mul_rn(d, x), s));
      const float g = mul_rn(s, sub_rn(mul_rn(d, w), mul_rn(x, k)));
      dinp[r * C + c] = add_rn(dinp[r * C + c], g);
    }
    partials[blockIdx.x * C + c] = pw;
  }
}

// dst[c] += Σ_p partials[p, c]: block of 32 channels, warp w sums parts
// w, w + 8, ... in order, then warp 0 adds the 8 warp sums in warp order.
__global__ void sum_partials_kernel(float* dst, const float* partials, int64_t parts, int64_t C) {
  __shared__ float warp_sums[kWarps][32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * 32 + lane;
  float acc = 0.0f;
  if (c < C) {
    for (int64_t p = warp; p < parts; p += kWarps) acc = add_rn(acc, partials[p * C + c]);
  }
  warp_sums[warp][lane] = acc;
  __syncthreads();
  if (warp != 0 || c >= C) return;
  float total = 0.0f;
  for (int w = 0; w < kWarps; ++w) total = add_rn(total, warp_sums[w][lane]);
  dst[c] = add_rn(dst[c], total);
}

Status sum_partials(cudaStream_t stream, float* dst, const float* partials, int64_t parts,
                    int64_t C) {
  const auto grid = static_cast<unsigned>((C + 31) / 32);
  sum_partials_kernel<<<grid, kThreads, 0, stream>>>(dst, partials, parts, C);
  return check_launch("sum_partials_kernel");
}

template <typename Elem>
Status layernorm_forward_as(cudaStream_t stream, typename Elem::T* out, float* mean, float* rstd,
                            const float* inp, const float* weight, const float* bias, int64_t rows,
                            int64_t C) {
  if (rows <= 0) return ok_status();
  layernorm_forward_kernel<Elem>
      <<<warp_row_grid(rows), kThreads, 0, stream>>>(out, mean, rstd, inp, weight, bias, rows, C);
  return check_launch("layernorm_forward_kernel");
}

}  // namespace

Status layernorm_forward(cudaStream_t stream, float* out, float* mean, float* rstd,
                         const float* inp, const float* weight, const float* bias, int64_t B,
                         int64_t T, int64_t C) {
  return layernorm_forward_as<F32Elem>(stream, out, mean, rstd, inp, weight, bias, B * T, C);
}

Status layernorm_forward_bf16(cudaStream_t stream, BFloat16* out, float* mean, float* rstd,
                              const float* inp, const float* weight, const float* bias, int64_t B,
                              int64_t T, int64_t C) {
  return layernorm_forward_as<Bf16Elem>(stream, reinterpret_cast<uint16_t*>(out), mean, rstd, inp,
                                        weight, bias, B * T, C);
}

Status layernorm_backward(cudaStream_t stream, float* dinp, float* dweight, float* dbias,
                          const float* dout, const float* inp, const float* weight,
                          const float* mean, const float* rstd, int64_t B, int64_t T, int64_t C) {
  const int64_t rows = B * T;
  if (rows <= 0 || C <= 0) return ok_status();
  const int64_t R = rows_per_block(rows), blocks = (rows + R - 1) / R;
  const size_t bytes = static_cast<size_t>(2 * blocks * C) * sizeof(float);
  return with_scratch(stream, bytes, [&](void* p) -> Status {
    auto* partials = static_cast<float*>(p);
    const size_t stats_bytes = 4 * static_cast<size_t>(R) * sizeof(float);
    layernorm_backward_kernel<<<static_cast<unsigned>(blocks), kThreads, stats_bytes, stream>>>(
        dinp, partials, dout, inp, weight, mean, rstd, rows, C, R);
    ZT_RETURN_IF_ERROR(check_launch("layernorm_backward_kernel"));
    ZT_RETURN_IF_ERROR(sum_partials(stream, dweight, partials, blocks, C));
    return sum_partials(stream, dbias, partials + blocks * C, blocks, C);
  });
}

Status rmsnorm_forward(cudaStream_t stream, float* out, float* rstd, const float* inp,
                       const float* weight, int64_t rows, int64_t C, float eps) {
  if (rows <= 0) return ok_status();
  rmsnorm_forward_kernel<F32Elem>
      <<<warp_row_grid(rows), kThreads, 0, stream>>>(out, rstd, inp, weight, rows, C, eps);
  return check_launch("rmsnorm_forward_kernel");
}

Status rmsnorm_forward_bf16(cudaStream_t stream, BFloat16* out, float* rstd, const float* inp,
                            const float* weight, int64_t rows, int64_t C, float eps) {
  if (rows <= 0) return ok_status();
  rmsnorm_forward_kernel<Bf16Elem><<<warp_row_grid(rows), kThreads, 0, stream>>>(
      reinterpret_cast<uint16_t*>(out), rstd, inp, weight, rows, C, eps);
  return check_launch("rmsnorm_forward_kernel<bf16>");
}

Status rmsnorm_backward(cudaStream_t stream, float* dinp, float* dweight, const float* dout,
                        const float* inp, const float* weight, const float* rstd, int64_t rows,
                        int64_t C) {
  if (rows <= 0 || C <= 0) return ok_status();
  const int64_t R = rows_per_block(rows), blocks = (rows + R - 1) / R;
  const size_t bytes = static_cast<size_t>(blocks * C) * sizeof(float);
  return with_scratch(stream, bytes, [&](void* p) -> Status {
    auto* partials = static_cast<float*>(p);
    const size_t stats_bytes = 2 * static_cast<size_t>(R) * sizeof(float);
    rmsnorm_backward_kernel<<<static_cast<unsigned>(blocks), kThreads, stats_bytes, stream>>>(
        dinp, partials, dout, inp, weight, rstd, rows, C, R);
    ZT_RETURN_IF_ERROR(check_launch("rmsnorm_backward_kernel"));
    return sum_partials(stream, dweight, partials, blocks, C);
  });
}

}  // namespace zerotrain::device::cuda::kernels
