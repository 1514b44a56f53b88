// The embedding and RoPE launchers of kernels.h ("layers.cu"): the token +
// position encoder and the rotary grouped-query packing, mirroring
// device/cpu/kernels/encoder.cc and rope.cc element for element. The norms
// are in norms.cu.
//
// Determinism (kernels.h): the encoder backward's scatter-add sums each
// destination row's sources in (b, t) order, the CPU's own order, so it
// gives the CPU's bits: rows are grouped by a stable radix sort of the ids
// (CUB), then one thread per (row, channel) walks its group. The RoPE
// backward sums the query heads sharing a kv head in head order.
#include <climits>
#include <cub/device/device_radix_sort.cuh>

#include "device/cuda/cuda_status.h"
#include "device/cuda/element_math.h"
#include "device/cuda/kernels/kernels.h"
#include "device/cuda/kernels/layer_util.cuh"
#include "device/cuda/launch_geometry.h"

namespace zerotrain::device::cuda::kernels {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ int64_t global_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t global_stride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

// ---- encoder ----

__global__ void encoder_forward_kernel(float* out, const int32_t* tokens, const float* wte,
                                       const float* wpe, const int32_t* positions, int64_t BT,
                                       int64_t T, int64_t C) {
  for (int64_t e = global_index(); e < BT * C; e += global_stride()) {
    const int64_t i = e / C, c = e % C;
    const float tok = wte[static_cast<int64_t>(tokens[i]) * C + c];
    if (wpe == nullptr) {
      out[e] = tok;
      continue;
    }
    const int64_t p = positions ? positions[i] : i % T;
    out[e] = tok + wpe[p * C + c];
  }
}

// dwpe[t,c] += Σ_b dout[b,t,c], b in order (positions absent: row t's
// sources are exactly (0..B-1, t)).
__global__ void position_grad_kernel(float* dwpe, const float* dout, int64_t B, int64_t T,
                                     int64_t C) {
  for (int64_t e = global_index(); e < T * C; e += global_stride()) {
    float acc = dwpe[e];
    for (int64_t b = 0; b < B; ++b) acc += dout[b * T * C + e];
    dwpe[e] = acc;
  }
}

__global__ void iota_kernel(int32_t* out, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) out[i] = static_cast<int32_t>(i);
}

// Block x = a position j of the sorted ids, block y a chunk of channels.
// Only the first position of each run of equal ids works: its threads add
// the run's source rows (in increasing source index, the sort being
// stable) into the destination row, one channel each.
__global__ void scatter_rows_kernel(float* dst, const float* src, const int32_t* sorted_ids,
                                    const int32_t* sources, int64_t n, int64_t C) {
  const int64_t j = blockIdx.x;
  const int32_t id = sorted_ids[j];
  if (j > 0 && sorted_ids[j - 1] == id) return;
  const int64_t c = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float* row = dst + static_cast<int64_t>(id) * C;
  float acc = row[c];
  for (int64_t k = j; k < n && sorted_ids[k] == id; ++k)
    acc += src[static_cast<int64_t>(sources[k]) * C + c];
  row[c] = acc;
}

size_t align_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

// dst[ids[i], :] += src[i, :] for i < n, each row's sources in order.
Status scatter_add_rows(cudaStream_t stream, float* dst, const float* src, const int32_t* ids,
                        int64_t n, int64_t C) {
  if (n > INT32_MAX) {
    return invalid_argument(detail::concat("encoder_backward: ", n, " tokens exceed 2^31 - 1"));
  }
  const int64_t chunks = (C + kThreads - 1) / kThreads;
  if (chunks > 65535) {
    return invalid_argument(detail::concat("encoder_backward: C=", C, " is too wide"));
  }
  size_t sort_bytes = 0;
  ZT_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(
      nullptr, sort_bytes, static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr),
      static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), n, 0, 32, stream));
  const size_t array_bytes = align_up(static_cast<size_t>(n) * sizeof(int32_t));
  return with_scratch(stream, 3 * array_bytes + sort_bytes, [&](void* p) -> Status {
    auto* base = static_cast<char*>(p);
    auto* sorted_ids = reinterpret_cast<int32_t*>(base);
    auto* order = reinterpret_cast<int32_t*>(base + array_bytes);
    auto* sources = reinterpret_cast<int32_t*>(base + 2 * array_bytes);
    const Grid g = grid_1d(n, kThreads);
    iota_kernel<<<static_cast<unsigned>(g.blocks), g.threads, 0, stream>>>(order, n);
    ZT_RETURN_IF_ERROR(check_launch("iota_kernel"));
    ZT_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(
        base + 3 * array_bytes, sort_bytes, ids, sorted_ids, order, sources, n, 0, 32, stream));
    const dim3 grid(static_cast<unsigned>(n), static_cast<unsigned>(chunks));
    scatter_rows_kernel<<<grid, kThreads, 0, stream>>>(dst, src, sorted_ids, sources, n, C);
    return check_launch("scatter_rows_kernel");
  });
}

// ---- RoPE + grouped-query packing ----

struct RopeShape {
  int64_t T, NH, HD, C, KC, rep, half;
};

RopeShape rope_shape(int64_t T, int64_t NH, int64_t NKV, int64_t HD) {
  return {T, NH, HD, NH * HD, NKV * HD, NH / NKV, HD / 2};
}

// Element e (< HD) of x's head rotated by the table row cs/sn (rope.cc's
// rotate, each operation rounded as there: the CPU's bits). x is Elem-typed
// (fp32, or the bf16 Llama path's: widened exactly).
template <typename Elem>
__device__ __forceinline__ float rotate_at(const typename Elem::T* x, const float* cs,
                                           const float* sn, int64_t e, int64_t half) {
  if (e < half)
    return sub_rn(mul_rn(Elem::load(x, e), cs[e]), mul_rn(Elem::load(x, e + half), sn[e]));
  const int64_t i = e - half;
  return add_rn(mul_rn(Elem::load(x, e), cs[i]), mul_rn(Elem::load(x, i), sn[i]));
}

// Element e of the transposed rotation (rope.cc's rotate_back_add).
template <typename Elem>
__device__ __forceinline__ float rotate_back_at(const typename Elem::T* d, const float* cs,
                                                const float* sn, int64_t e, int64_t half) {
  if (e < half)
    return add_rn(mul_rn(Elem::load(d, e), cs[e]), mul_rn(Elem::load(d, e + half), sn[e]));
  const int64_t i = e - half;
  return sub_rn(mul_rn(Elem::load(d, e), cs[i]), mul_rn(Elem::load(d, i), sn[i]));
}

__device__ __forceinline__ int64_t table_row(const int32_t* positions, int64_t i, int64_t T) {
  return positions ? positions[i] : i % T;
}

// One thread per element of qkv [BT, 3C]: q rotated, k rotated and v
// copied from kv head h / rep; every array Elem-typed, stored rounded once.
template <typename Elem>
__global__ void rope_pack_kernel(typename Elem::T* qkv, const typename Elem::T* q,
                                 const typename Elem::T* k, const typename Elem::T* v,
                                 const float* cos, const float* sin, const int32_t* positions,
                                 int64_t BT, RopeShape s) {
  const int64_t width = 3 * s.C;
  for (int64_t idx = global_index(); idx < BT * width; idx += global_stride()) {
    const int64_t i = idx / width, col = idx % width;
    const int64_t part = col / s.C, h = (col % s.C) / s.HD, e = col % s.HD;
    const int64_t t = table_row(positions, i, s.T);
    const float* cs = cos + t * s.half;
    const float* sn = sin + t * s.half;
    const int64_t kv = i * s.KC + (h / s.rep) * s.HD;
    if (part == 0) {
      Elem::store(qkv, idx, rotate_at<Elem>(q + i * s.C + h * s.HD, cs, sn, e, s.half));
    } else if (part == 1) {
      Elem::store(qkv, idx, rotate_at<Elem>(k + kv, cs, sn, e, s.half));
    } else {
      Elem::store(qkv, idx, Elem::load(v, kv + e));
    }
  }
}

// One thread per element of dq [BT, C], dk and dv [BT, KC] (in that flat
// order): dq un-rotated; dk and dv sum the rep query heads of their kv head
// in head order, from 0 as rope.cc's zero-fill-then-add.
template <typename Elem>
__global__ void rope_unpack_kernel(typename Elem::T* dq, typename Elem::T* dk,
                                   typename Elem::T* dv, const typename Elem::T* dqkv,
                                   const float* cos, const float* sin, const int32_t* positions,
                                   int64_t BT, RopeShape s) {
  const int64_t width = s.C + 2 * s.KC;
  for (int64_t idx = global_index(); idx < BT * width; idx += global_stride()) {
    const int64_t i = idx / width, col = idx % width;
    const int64_t t = table_row(positions, i, s.T);
    const float* cs = cos + t * s.half;
    const float* sn = sin + t * s.half;
    const typename Elem::T* d = dqkv + i * 3 * s.C;
    if (col < s.C) {
      const int64_t h = col / s.HD, e = col % s.HD;
      Elem::store(dq, i * s.C + col,
                  add_rn(0.0f, rotate_back_at<Elem>(d + h * s.HD, cs, sn, e, s.half)));
      continue;
    }
    const bool is_k = col < s.C + s.KC;
    const int64_t kc = is_k ? col - s.C : col - s.C - s.KC;
    const int64_t j = kc / s.HD, e = kc % s.HD;
    float acc = 0.0f;
    for (int64_t r = 0; r < s.rep; ++r) {
      const int64_t head = (j * s.rep + r) * s.HD;
      acc = add_rn(acc, is_k ? rotate_back_at<Elem>(d + s.C + head, cs, sn, e, s.half)
                             : Elem::load(d, 2 * s.C + head + e));
    }
    Elem::store(is_k ? dk : dv, i * s.KC + kc, acc);
  }
}

}  // namespace

Status encoder_forward(cudaStream_t stream, float* out, const int32_t* tokens, const float* wte,
                       const float* wpe, int64_t B, int64_t T, int64_t C, int64_t V,
                       const int32_t* positions) {
  int64_t bad = -1;
  int32_t id = 0;
  ZT_RETURN_IF_ERROR(first_out_of_range(stream, tokens, B * T, 0, V, &bad, &id));
  if (bad >= 0) {
    return invalid_argument(detail::concat("encoder: token id ", id, " at (b=", bad / T,
                                           ", t=", bad % T, ") is outside [0, V=", V, ")"));
  }
  const Grid g = grid_1d(B * T * C, kThreads);
  if (g.blocks == 0) return ok_status();
  encoder_forward_kernel<<<static_cast<unsigned>(g.blocks), g.threads, 0, stream>>>(
      out, tokens, wte, wpe, positions, B * T, T, C);
  return check_launch("encoder_forward_kernel");
}

Status encoder_backward(cudaStream_t stream, float* dwte, float* dwpe, const float* dout,
                        const int32_t* tokens, int64_t B, int64_t T, int64_t C,
                        const int32_t* positions) {
  if (B * T == 0 || C == 0) return ok_status();
  ZT_RETURN_IF_ERROR(scatter_add_rows(stream, dwte, dout, tokens, B * T, C));
  if (dwpe == nullptr) return ok_status();
  if (positions != nullptr) return scatter_add_rows(stream, dwpe, dout, positions, B * T, C);
  const Grid g = grid_1d(T * C, kThreads);
  position_grad_kernel<<<static_cast<unsigned>(g.blocks), g.threads, 0, stream>>>(dwpe, dout, B, T,
                                                                                  C);
  return check_launch("position_grad_kernel");
}

Status rope_pack_qkv(cudaStream_t stream, float* qkv, const float* q, const float* k,
                     const float* v, const float* cos, const float* sin, int64_t B, int64_t T,
                     int64_t NH, int64_t NKV, int64_t HD, const int32_t* positions) {
  const Grid g = grid_1d(B * T * 3 * NH * HD, kThreads);
  if (g.blocks == 0) return ok_status();
  rope_pack_kernel<F32Elem><<<static_cast<unsigned>(g.blocks), g.threads, 0, stream>>>(
      qkv, q, k, v, cos, sin, positions, B * T, rope_shape(T, NH, NKV, HD));
  return check_launch("rope_pack_kernel");
}

Status rope_unpack_qkv_backward(cudaStream_t stream, float* dq, float* dk, float* dv,
                                const float* dqkv, const float* cos, const float* sin, int64_t B,
                                int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                                const int32_t* positions) {
  const Grid g = grid_1d(B * T * (NH + 2 * NKV) * HD, kThreads);
  if (g.blocks == 0) return ok_status();
  rope_unpack_kernel<F32Elem><<<static_cast<unsigned>(g.blocks), g.threads, 0, stream>>>(
      dq, dk, dv, dqkv, cos, sin, positions, B * T, rope_shape(T, NH, NKV, HD));
  return check_launch("rope_unpack_kernel");
}

Status rope_pack_qkv_bf16(cudaStream_t stream, BFloat16* qkv, const BFloat16* q,
                          const BFloat16* k, const BFloat16* v, const float* cos, const float* sin,
                          int64_t B, int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                          const int32_t* positions) {
  const Grid g = grid_1d(B * T * 3 * NH * HD, kThreads);
  if (g.blocks == 0) return ok_status();
  using U = uint16_t;
  rope_pack_kernel<Bf16Elem><<<static_cast<unsigned>(g.blocks), g.threads, 0, stream>>>(
      reinterpret_cast<U*>(qkv), reinterpret_cast<const U*>(q), reinterpret_cast<const U*>(k),
      reinterpret_cast<const U*>(v), cos, sin, positions, B * T, rope_shape(T, NH, NKV, HD));
  return check_launch("rope_pack_kernel<bf16>");
}

Status rope_unpack_qkv_backward_bf16(cudaStream_t stream, BFloat16* dq, BFloat16* dk, BFloat16* dv,
                                     const BFloat16* dqkv, const float* cos, const float* sin,
                                     int64_t B, int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                                     const int32_t* positions) {
  const Grid g = grid_1d(B * T * (NH + 2 * NKV) * HD, kThreads);
  if (g.blocks == 0) return ok_status();
  using U = uint16_t;
  rope_unpack_kernel<Bf16Elem><<<static_cast<unsigned>(g.blocks), g.threads, 0, stream>>>(
      reinterpret_cast<U*>(dq), reinterpret_cast<U*>(dk), reinterpret_cast<U*>(dv),
      reinterpret_cast<const U*>(dqkv), cos, sin, positions, B * T, rope_shape(T, NH, NKV, HD));
  return check_launch("rope_unpack_kernel<bf16>");
}

}  // namespace zerotrain::device::cuda::kernels
