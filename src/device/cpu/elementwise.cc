// The CPU element ops (see elementwise.h).
#include "device/cpu/elementwise.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <span>

#include "core/half.h"
#include "core/status.h"
#include "device/cpu/convert.h"
#include "device/cpu/optimizer_kernels.h"

namespace zerotrain::device::cpu {

void to_fp32(DType dtype, const void* src, size_t n, float* out) {
  if (n == 0) return;
  switch (dtype) {
    case DType::kFloat32:
      std::memcpy(out, src, n * sizeof(float));
      return;
    case DType::kBFloat16:
      bf16_to_fp32({static_cast<const BFloat16*>(src), n}, {out, n});
      return;
    case DType::kFloat16:
      fp16_to_fp32({static_cast<const Half*>(src), n}, {out, n});
      return;
  }
}

void from_fp32(DType dtype, const float* in, size_t n, void* dst) {
  if (n == 0) return;
  switch (dtype) {
    case DType::kFloat32:
      std::memmove(dst, in, n * sizeof(float));
      return;
    case DType::kBFloat16:
      fp32_to_bf16({in, n}, {static_cast<BFloat16*>(dst), n});
      return;
    case DType::kFloat16:
      fp32_to_fp16({in, n}, {static_cast<Half*>(dst), n});
      return;
  }
}

namespace {

// fn(begin, count) over [0, n) in blocks of 32 Ki elements, on the OpenMP
// threads when there are several blocks (element-wise work: the same
// values with any thread count). A compute copy's conversions run at every
// pass, so with 2 threads a rank they must not leave one of them idle.
template <typename Fn>
void for_blocks(size_t n, Fn&& fn) {
  constexpr size_t kBlock = size_t{1} << 15;
  if (n <= kBlock) {
    if (n > 0) fn(size_t{0}, n);
    return;
  }
  const auto blocks = static_cast<int64_t>((n + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t begin = static_cast<size_t>(b) * kBlock;
    fn(begin, std::min(kBlock, n - begin));
  }
}

const std::byte* at(const void* p, DType d, size_t i) {
  return static_cast<const std::byte*>(p) + i * dtype_size(d);
}
std::byte* at(void* p, DType d, size_t i) { return static_cast<std::byte*>(p) + i * dtype_size(d); }

constexpr size_t kRoundBlock = 4096;  // elements per conversion block (fits L1 twice)

template <typename Half16, void (*kDown)(std::span<const float>, std::span<Half16>),
          void (*kUp)(std::span<const Half16>, std::span<float>)>
void round_blocks(const float* in, float* out, size_t count) {
  const auto n = static_cast<int64_t>(count);
  const auto block = static_cast<int64_t>(kRoundBlock);
  const int64_t blocks = (n + block - 1) / block;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    std::array<Half16, kRoundBlock> tmp;
    const int64_t begin = b * block;
    const auto len = static_cast<size_t>(std::min(block, n - begin));
    kDown(std::span<const float>(in + begin, len), std::span<Half16>(tmp.data(), len));
    kUp(std::span<const Half16>(tmp.data(), len), std::span<float>(out + begin, len));
  }
}

// Elements per block of the in-place narrowing/widening: a block is read
// whole into a local array before any of its output is written, which
// makes the in-place directions safe.
constexpr size_t kWireBlock = 4096;

}  // namespace

void convert_blocks(DType from, const void* src, DType to, void* dst, size_t n) {
  if (from == to) {
    if (src != dst && n > 0) std::memcpy(dst, src, n * dtype_size(from));
    return;
  }
  if (from == DType::kFloat32) {
    const auto* in = static_cast<const float*>(src);
    for_blocks(n, [&](size_t b, size_t len) { from_fp32(to, in + b, len, at(dst, to, b)); });
    return;
  }
  if (to == DType::kFloat32) {
    auto* out = static_cast<float*>(dst);
    for_blocks(n, [&](size_t b, size_t len) { to_fp32(from, at(src, from, b), len, out + b); });
    return;
  }
  for_blocks(n, [&](size_t b0, size_t len0) {  // 16 <-> 16 bits through fp32
    std::array<float, 2048> tmp;
    for (size_t b = b0; b < b0 + len0; b += tmp.size()) {
      const size_t len = std::min(tmp.size(), b0 + len0 - b);
      to_fp32(from, at(src, from, b), len, tmp.data());
      from_fp32(to, tmp.data(), len, at(dst, to, b));
    }
  });
}

void add_rounded(DType dtype, void* dst, const float* in, size_t n) {
  if (dtype == DType::kFloat32) {
    float* d = static_cast<float*>(dst);
    for_blocks(n, [&](size_t b, size_t len) {
      for (size_t i = b; i < b + len; ++i) d[i] += in[i];
    });
    return;
  }
  for_blocks(n, [&](size_t b0, size_t len0) {
    constexpr size_t kBlock = 2048;
    std::array<float, kBlock> tmp;
    for (size_t b = b0; b < b0 + len0; b += kBlock) {
      const size_t len = std::min(kBlock, b0 + len0 - b);
      to_fp32(dtype, at(dst, dtype, b), len, tmp.data());
      for (size_t i = 0; i < len; ++i) tmp[i] += in[b + i];
      from_fp32(dtype, tmp.data(), len, at(dst, dtype, b));
    }
  });
}

void round_through(DType dtype, const float* in, float* out, size_t n) {
  switch (dtype) {
    case DType::kFloat32:
      if (in != out && n > 0) std::memmove(out, in, n * sizeof(float));
      return;
    case DType::kBFloat16:
      round_blocks<BFloat16, fp32_to_bf16, bf16_to_fp32>(in, out, n);
      return;
    case DType::kFloat16:
      round_blocks<Half, fp32_to_fp16, fp16_to_fp32>(in, out, n);
      return;
  }
}

void narrow_in_place(float* x, size_t n, float scale_by, DType wire) {
  if (wire == DType::kFloat32) {
    if (scale_by != 1.0f) scale(x, n, scale_by);
    return;
  }
  auto* out = reinterpret_cast<std::byte*>(x);
  const size_t es = dtype_size(wire);
  alignas(64) float block[kWireBlock];
  // Block b's output [b·es, (b + len)·es) bytes lies below float b + len:
  // it overwrites only floats of this block (already copied) or earlier.
  for (size_t b = 0; b < n; b += kWireBlock) {
    const size_t len = std::min(kWireBlock, n - b);
    for (size_t i = 0; i < len; ++i) block[i] = scale_by * x[b + i];
    from_fp32(wire, block, len, out + b * es);
  }
}

void widen_in_place(const void* src_v, size_t n, DType wire, float scale_by, float* dst) {
  if (n == 0) return;
  const auto* src = static_cast<const std::byte*>(src_v);
  const size_t es = dtype_size(wire);
  const auto* d = reinterpret_cast<const std::byte*>(dst);
  ZT_CHECK(d >= src || d + n * sizeof(float) <= src,
           "widen_in_place: the fp32 output starts below its overlapping source");
  alignas(64) float block[kWireBlock];
  alignas(64) std::byte raw[kWireBlock * 4];
  // Top block first: block b's floats start at dst + b, at or after its
  // source bytes src + b·es, so they only cover values already read.
  for (size_t end = n; end > 0;) {
    const size_t b = end > kWireBlock ? end - kWireBlock : 0, len = end - b;
    std::memcpy(raw, src + b * es, len * es);
    to_fp32(wire, raw, len, block);
    for (size_t i = 0; i < len; ++i) dst[b + i] = scale_by * block[i];
    end = b;
  }
}

}  // namespace zerotrain::device::cpu
