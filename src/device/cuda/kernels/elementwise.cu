// The CUDA memory-wide element ops and element-wise layers (kernels.h,
// "elementwise.cu"): dtype conversions, add, round_through, scale, the
// deterministic sum of squares, the in-place narrowing/widening of the
// gradient wire, GELU, SwiGLU, residual and axpy. Each kernel is a
// grid-stride loop around one element_math.h function, so its arithmetic
// is the one tests/device/cuda/element_math_test.cc checks against the CPU
// kernels; conversions round to nearest even exactly as core/half.h.
#include <algorithm>
#include <string>

#include "device/cuda/cuda_status.h"
#include "device/cuda/element_math.h"
#include "device/cuda/layer_math.h"
#include "device/cuda/kernels/kernels.h"
#include "device/cuda/launch_geometry.h"
#include "device/op_checks.h"

namespace zerotrain::device::cuda::kernels {
namespace {

__device__ __forceinline__ int64_t grid_start() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_stride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}
#define ZT_GRID_LOOP(i, n) for (int64_t i = grid_start(); i < (n); i += grid_stride())

// Launches kernel(args..., n) over grid_1d(n); nothing for n <= 0.
template <typename... Params, typename... Args>
Status launch_1d(cudaStream_t stream, const char* name, int64_t n, void (*kernel)(Params...),
                 Args... args) {
  const Grid g = grid_1d(n);
  if (g.blocks == 0) return ok_status();
  kernel<<<static_cast<unsigned>(g.blocks), g.threads, 0, stream>>>(args..., n);
  return check_launch(name);
}

// fn(F32Elem{} / Fp16Elem{} / Bf16Elem{}) for dtype d.
template <typename Fn>
Status with_elem(DType d, Fn&& fn) {
  switch (d) {
    case DType::kFloat32:
      return fn(F32Elem{});
    case DType::kFloat16:
      return fn(Fp16Elem{});
    case DType::kBFloat16:
      return fn(Bf16Elem{});
  }
  return invalid_argument("unknown dtype");
}

// Stream-ordered scratch (kernels.h: the pool, never managed memory),
// freed on `stream` by release() or, on an error path, the destructor.
class Scratch {
 public:
  explicit Scratch(cudaStream_t stream) : stream_(stream) {}
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() {
    if (p_ != nullptr) (void)cudaFreeAsync(p_, stream_);
  }
  Status allocate(size_t bytes) {
    ZT_CUDA_RETURN_IF_ERROR(cudaMallocAsync(&p_, bytes, stream_));
    return ok_status();
  }
  Status release() {
    void* p = p_;
    p_ = nullptr;
    ZT_CUDA_RETURN_IF_ERROR(cudaFreeAsync(p, stream_));
    return ok_status();
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  cudaStream_t stream_;
  void* p_ = nullptr;
};

// ---- Kernels ----

template <typename In, typename Out>
__global__ void convert_kernel(typename Out::T* dst, const typename In::T* src, int64_t n) {
  ZT_GRID_LOOP(i, n) { Out::store(dst, i, In::load(src, i)); }
}

template <typename D>
__global__ void add_kernel(typename D::T* dst, const float* src, int64_t n) {
  ZT_GRID_LOOP(i, n) { D::store(dst, i, D::load(dst, i) + src[i]); }
}

template <typename D>
__global__ void round_through_kernel(float* out, const float* in, int64_t n) {
  ZT_GRID_LOOP(i, n) { out[i] = D::round(in[i]); }
}

__global__ void scale_kernel(float* x, float factor, int64_t n) {
  ZT_GRID_LOOP(i, n) { x[i] = x[i] * factor; }
}

// dst = wire(scale·x) (the CPU's narrow_in_place block, scale first).
template <typename W>
__global__ void narrow_kernel(typename W::T* dst, const float* x, float scale, int64_t n) {
  ZT_GRID_LOOP(i, n) { W::store(dst, i, scale * x[i]); }
}

// dst = scale·float(src); safe in place only when dst and src are the same
// fp32 elements (each thread reads its element before writing it).
template <typename W>
__global__ void widen_kernel(float* dst, const typename W::T* src, float scale, int64_t n) {
  ZT_GRID_LOOP(i, n) { dst[i] = scale * W::load(src, i); }
}

// ---- Sum of squares ----
// Partial r is Σ x² over elements [r·kSumRange, (r+1)·kSumRange) (the
// CPU's block), summed in double by a fixed thread pattern and a fixed
// tree; which CUDA block computes a range does not matter, so the value
// is the same for any grid and any run. A single block then sums the
// partials the same way.
constexpr int64_t kSumRange = int64_t{1} << 15;
constexpr int kSumThreads = 256;

// lane[0] = Σ lane[0, kSumThreads) in a fixed pairwise order.
__device__ double block_tree_sum(double* lane) {
  for (int s = kSumThreads / 2; s > 0; s >>= 1) {
    __syncthreads();
    if (static_cast<int>(threadIdx.x) < s) lane[threadIdx.x] += lane[threadIdx.x + s];
  }
  __syncthreads();
  const double total = lane[0];
  __syncthreads();  // lane is reused by the caller's next round
  return total;
}

template <typename D>
__global__ void sum_squares_partials(double* partial, const typename D::T* x, int64_t n,
                                     int64_t ranges) {
  __shared__ double lane[kSumThreads];
  for (int64_t r = blockIdx.x; r < ranges; r += gridDim.x) {
    const int64_t begin = r * kSumRange;
    const int64_t end = n - begin < kSumRange ? n : begin + kSumRange;
    double acc = 0.0;
    for (int64_t i = begin + threadIdx.x; i < end; i += kSumThreads) {
      const double v = D::load(x, i);  // exact widening
      acc += v * v;  // exact product: a fused multiply-add rounds the same
    }
    lane[threadIdx.x] = acc;
    const double total = block_tree_sum(lane);
    if (threadIdx.x == 0) partial[r] = total;
  }
}

__global__ void sum_partials(double* result, const double* partial, int64_t count) {
  __shared__ double lane[kSumThreads];
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += kSumThreads) acc += partial[i];
  lane[threadIdx.x] = acc;
  const double total = block_tree_sum(lane);
  if (threadIdx.x == 0) *result = total;
}

// ---- Activations ----

__global__ void gelu_forward_kernel(float* out, const float* inp, int64_t n) {
  ZT_GRID_LOOP(i, n) { out[i] = gelu_tanh(inp[i]); }
}

__global__ void gelu_backward_kernel(float* dinp, const float* inp, const float* dout,
                                     bool accumulate, int64_t n) {
  ZT_GRID_LOOP(i, n) {
    const float d = mul_rn(gelu_slope(inp[i]), dout[i]);
    dinp[i] = accumulate ? add_rn(dinp[i], d) : d;
  }
}

// The CPU's bf16 forms: widen the bf16 input, the fp32 formula, round once.
__global__ void gelu_forward_bf16_kernel(uint16_t* out, const uint16_t* inp, int64_t n) {
  ZT_GRID_LOOP(i, n) { Bf16Elem::store(out, i, gelu_tanh(Bf16Elem::load(inp, i))); }
}

__global__ void gelu_backward_bf16_kernel(uint16_t* dinp, const uint16_t* inp, const float* dout,
                                          int64_t n) {
  ZT_GRID_LOOP(i, n) {
    Bf16Elem::store(dinp, i, mul_rn(gelu_slope(Bf16Elem::load(inp, i)), dout[i]));
  }
}

// SwiGLU over Elem-typed gate, up and outputs (fp32, or the bf16 Llama
// path's: widened, the fp32 formula, rounded once); dout is fp32.
template <typename Elem>
__global__ void swiglu_forward_kernel(typename Elem::T* out, const typename Elem::T* gate,
                                      const typename Elem::T* up, int64_t n) {
  ZT_GRID_LOOP(i, n) { Elem::store(out, i, swiglu(Elem::load(gate, i), Elem::load(up, i))); }
}

template <typename Elem>
__global__ void swiglu_backward_kernel(typename Elem::T* dgate, typename Elem::T* dup,
                                       const float* dout, const typename Elem::T* gate,
                                       const typename Elem::T* up, int64_t n) {
  ZT_GRID_LOOP(i, n) {
    const SwigluGrads g = swiglu_grads(dout[i], Elem::load(gate, i), Elem::load(up, i));
    Elem::store(dgate, i, g.dgate);
    Elem::store(dup, i, g.dup);
  }
}

__global__ void residual_forward_kernel(float* out, const float* a, const float* b, int64_t n) {
  ZT_GRID_LOOP(i, n) { out[i] = a[i] + b[i]; }
}

__global__ void axpy_kernel(float* y, float a, const float* x, int64_t n) {
  ZT_GRID_LOOP(i, n) { y[i] = axpy_element(y[i], a, x[i]); }
}

// QLoRA's 4-bit weights (quant4.h): one element a thread, quant4_element
// as dequantize_4bit_reference.
__global__ void dequantize_4bit_kernel(Quant4View q, int64_t begin, float* out, int64_t n) {
  ZT_GRID_LOOP(i, n) { out[i] = quant4_element(q, begin + i); }
}

const uint16_t* bits(const BFloat16* p) { return reinterpret_cast<const uint16_t*>(p); }
uint16_t* bits(BFloat16* p) { return reinterpret_cast<uint16_t*>(p); }

}  // namespace

Status convert(cudaStream_t stream, ConstTensor src, Tensor dst) {
  ZT_RETURN_IF_ERROR(check_same_numel("convert", src, dst));
  if (src.numel == 0) return ok_status();
  if (src.dtype == dst.dtype) {  // a copy; the same array (e.g. fp32 -> fp32 in place): nothing
    if (src.data == dst.data) return ok_status();
    ZT_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(dst.data, src.data, src.size_bytes(), cudaMemcpyDeviceToDevice, stream));
    return ok_status();
  }
  const auto n = static_cast<int64_t>(src.numel);
  return with_elem(src.dtype, [&](auto in) {
    return with_elem(dst.dtype, [&](auto out) {
      using In = decltype(in);
      using Out = decltype(out);
      return launch_1d(stream, "convert_kernel", n, convert_kernel<In, Out>,
                       static_cast<typename Out::T*>(dst.data),
                       static_cast<const typename In::T*>(src.data));
    });
  });
}

Status add(cudaStream_t stream, Tensor dst, ConstTensor src) {
  ZT_RETURN_IF_ERROR(check_same_numel("add", src, dst));
  ZT_RETURN_IF_ERROR(check_fp32("add", src));
  const auto n = static_cast<int64_t>(src.numel);
  return with_elem(dst.dtype, [&](auto d) {
    using D = decltype(d);
    return launch_1d(stream, "add_kernel", n, add_kernel<D>, static_cast<typename D::T*>(dst.data),
                     static_cast<const float*>(src.data));
  });
}

Status round_through(cudaStream_t stream, DType dtype, ConstTensor in, Tensor out) {
  ZT_RETURN_IF_ERROR(check_same_numel("round_through", in, out));
  ZT_RETURN_IF_ERROR(check_fp32("round_through", in));
  ZT_RETURN_IF_ERROR(check_fp32("round_through", out));
  if (in.numel == 0) return ok_status();
  if (dtype == DType::kFloat32) {
    if (in.data == out.data) return ok_status();
    ZT_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(out.data, in.data, in.size_bytes(), cudaMemcpyDeviceToDevice, stream));
    return ok_status();
  }
  const auto n = static_cast<int64_t>(in.numel);
  return with_elem(dtype, [&](auto d) {
    using D = decltype(d);
    return launch_1d(stream, "round_through_kernel", n, round_through_kernel<D>,
                     static_cast<float*>(out.data), static_cast<const float*>(in.data));
  });
}

Status scale(cudaStream_t stream, Tensor x, float factor) {
  ZT_RETURN_IF_ERROR(check_fp32("scale", x));
  return launch_1d(stream, "scale_kernel", static_cast<int64_t>(x.numel), scale_kernel,
                   static_cast<float*>(x.data), factor);
}

Status sum_squares(cudaStream_t stream, DType dtype, const void* x, size_t n, double* result) {
  if (result == nullptr) return invalid_argument("sum_squares: null result");
  *result = 0.0;
  if (n == 0) return ok_status();
  const auto count = static_cast<int64_t>(n);
  const int64_t ranges = (count + kSumRange - 1) / kSumRange;
  Scratch scratch(stream);  // the partials, then the total
  ZT_RETURN_IF_ERROR(scratch.allocate(static_cast<size_t>(ranges + 1) * sizeof(double)));
  double* partial = scratch.as<double>();
  const auto blocks = static_cast<unsigned>(std::min(ranges, kMaxBlocks1d));
  ZT_RETURN_IF_ERROR(with_elem(dtype, [&](auto e) {
    using D = decltype(e);
    sum_squares_partials<D><<<blocks, kSumThreads, 0, stream>>>(
        partial, static_cast<const typename D::T*>(x), count, ranges);
    return check_launch("sum_squares_partials");
  }));
  sum_partials<<<1, kSumThreads, 0, stream>>>(partial + ranges, partial, ranges);
  ZT_RETURN_IF_ERROR(check_launch("sum_partials"));
  double total = 0.0;
  ZT_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&total, partial + ranges, sizeof(double), cudaMemcpyDeviceToHost, stream));
  ZT_RETURN_IF_ERROR(scratch.release());
  ZT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  *result = total;
  return ok_status();
}

// Narrowing in place would race (element i's output bytes hold part of
// fp32 element i/2, which another thread may not have read yet), so the
// narrowed values go to scratch and are copied over x's first bytes.
Status narrow_in_place(cudaStream_t stream, Tensor x, float scale_by, DType wire) {
  ZT_RETURN_IF_ERROR(check_fp32("narrow_in_place", x));
  if (wire == DType::kFloat32) {
    if (scale_by == 1.0f) return ok_status();
    return scale(stream, x, scale_by);
  }
  if (x.numel == 0) return ok_status();
  const auto n = static_cast<int64_t>(x.numel);
  const size_t bytes = x.numel * dtype_size(wire);
  Scratch scratch(stream);
  ZT_RETURN_IF_ERROR(scratch.allocate(bytes));
  ZT_RETURN_IF_ERROR(with_elem(wire, [&](auto w) {
    using W = decltype(w);
    return launch_1d(stream, "narrow_kernel", n, narrow_kernel<W>, scratch.as<typename W::T>(),
                     static_cast<const float*>(x.data), scale_by);
  }));
  ZT_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(x.data, scratch.as<void>(), bytes, cudaMemcpyDeviceToDevice, stream));
  return scratch.release();
}

// dst overlapping src (other than the same fp32 elements) would race the
// same way, so the source is first copied to scratch.
Status widen_in_place(cudaStream_t stream, const void* src, size_t n, DType wire, float scale_by,
                      float* dst) {
  if (n == 0) return ok_status();
  const size_t src_bytes = n * dtype_size(wire);
  const auto s = reinterpret_cast<uintptr_t>(src), d = reinterpret_cast<uintptr_t>(dst);
  const bool overlap = d < s + src_bytes && s < d + n * sizeof(float);
  if (overlap && d < s) {
    return invalid_argument("widen_in_place: the fp32 output starts below its overlapping source");
  }
  Scratch scratch(stream);
  if (overlap && !(wire == DType::kFloat32 && d == s)) {
    ZT_RETURN_IF_ERROR(scratch.allocate(src_bytes));
    ZT_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(scratch.as<void>(), src, src_bytes, cudaMemcpyDeviceToDevice, stream));
    src = scratch.as<void>();
  }
  ZT_RETURN_IF_ERROR(with_elem(wire, [&](auto w) {
    using W = decltype(w);
    return launch_1d(stream, "widen_kernel", static_cast<int64_t>(n), widen_kernel<W>, dst,
                     static_cast<const typename W::T*>(src), scale_by);
  }));
  if (scratch.as<void>() != nullptr) return scratch.release();
  return ok_status();
}

Status swiglu_forward(cudaStream_t stream, float* out, const float* gate, const float* up,
                      int64_t N) {
  return launch_1d(stream, "swiglu_forward_kernel", N, swiglu_forward_kernel<F32Elem>, out, gate,
                   up);
}

Status swiglu_backward(cudaStream_t stream, float* dgate, float* dup, const float* dout,
                       const float* gate, const float* up, int64_t N) {
  return launch_1d(stream, "swiglu_backward_kernel", N, swiglu_backward_kernel<F32Elem>, dgate,
                   dup, dout, gate, up);
}

Status swiglu_forward_bf16(cudaStream_t stream, BFloat16* out, const BFloat16* gate,
                           const BFloat16* up, int64_t N) {
  return launch_1d(stream, "swiglu_forward_kernel<bf16>", N, swiglu_forward_kernel<Bf16Elem>,
                   bits(out), bits(gate), bits(up));
}

Status swiglu_backward_bf16(cudaStream_t stream, BFloat16* dgate, BFloat16* dup, const float* dout,
                            const BFloat16* gate, const BFloat16* up, int64_t N) {
  return launch_1d(stream, "swiglu_backward_kernel<bf16>", N, swiglu_backward_kernel<Bf16Elem>,
                   bits(dgate), bits(dup), dout, bits(gate), bits(up));
}

Status gelu_forward(cudaStream_t stream, float* out, const float* inp, int64_t N) {
  return launch_1d(stream, "gelu_forward_kernel", N, gelu_forward_kernel, out, inp);
}

Status gelu_backward(cudaStream_t stream, float* dinp, const float* inp, const float* dout,
                     int64_t N, bool accumulate) {
  return launch_1d(stream, "gelu_backward_kernel", N, gelu_backward_kernel, dinp, inp, dout,
                   accumulate);
}

Status gelu_forward_bf16(cudaStream_t stream, BFloat16* out, const BFloat16* inp, int64_t N) {
  return launch_1d(stream, "gelu_forward_bf16_kernel", N, gelu_forward_bf16_kernel, bits(out),
                   bits(inp));
}

Status gelu_backward_bf16(cudaStream_t stream, BFloat16* dinp, const BFloat16* inp,
                          const float* dout, int64_t N) {
  return launch_1d(stream, "gelu_backward_bf16_kernel", N, gelu_backward_bf16_kernel, bits(dinp),
                   bits(inp), dout);
}

Status residual_forward(cudaStream_t stream, float* out, const float* a, const float* b,
                        int64_t N) {
  return launch_1d(stream, "residual_forward_kernel", N, residual_forward_kernel, out, a, b);
}

Status axpy(cudaStream_t stream, float* y, float a, const float* x, int64_t N) {
  return launch_1d(stream, "axpy_kernel", N, axpy_kernel, y, a, x);
}

Status dequantize_4bit(cudaStream_t stream, const Quant4View& q, int64_t begin, int64_t end,
                       float* out) {
  return launch_1d(stream, "dequantize_4bit_kernel", end - begin, dequantize_4bit_kernel, q, begin,
                   out);
}

}  // namespace zerotrain::device::cuda::kernels
