// Gradient wire dtype: the in-place narrowing and widening (grad_wire.h).
#include "zero/grad_wire.h"

#include <algorithm>
#include <cstring>

#include "core/status.h"
#include "optim/grad_utils.h"
#include "zero/partition_array.h"

namespace zerotrain::zero {
namespace {

// Elements per block: a block is read whole into a local array before any
// of its output is written, which makes the in-place directions safe.
constexpr size_t kBlock = 4096;

}  // namespace

DType gradient_wire_dtype(const config::Config& config) {
  return config.communication_data_type.value_or(config.model_dtype());
}

std::span<std::byte> narrow_in_place(std::span<float> x, float scale, DType wire) {
  if (wire == DType::kFloat32) {
    if (scale != 1.0f) optim::scale_in_place(x, scale);
    return std::as_writable_bytes(x);
  }
  auto* out = reinterpret_cast<std::byte*>(x.data());
  const size_t es = dtype_size(wire);
  alignas(64) float block[kBlock];
  // Block b's output [b·es, (b + len)·es) bytes lies below float b + len:
  // it overwrites only floats of this block (already copied) or earlier.
  for (size_t b = 0; b < x.size(); b += kBlock) {
    const size_t len = std::min(kBlock, x.size() - b);
    for (size_t i = 0; i < len; ++i) block[i] = scale * x[b + i];
    from_fp32(wire, block, len, out + b * es);
  }
  return {out, x.size() * es};
}

void widen_in_place(const std::byte* src, size_t n, DType wire, float scale, float* dst) {
  if (n == 0) return;
  const size_t es = dtype_size(wire);
  const auto* d = reinterpret_cast<const std::byte*>(dst);
  ZT_CHECK(d >= src || d + n * sizeof(float) <= src,
           "widen_in_place: the fp32 output starts below its overlapping source");
  alignas(64) float block[kBlock];
  alignas(64) std::byte raw[kBlock * 4];
  // Top block first: block b's floats start at dst + b, at or after its
  // source bytes src + b·es, so they only cover values already read.
  for (size_t end = n; end > 0;) {
    const size_t b = end > kBlock ? end - kBlock : 0, len = end - b;
    std::memcpy(raw, src + b * es, len * es);
    to_fp32(wire, raw, len, block);
    for (size_t i = 0; i < len; ++i) dst[b + i] = scale * block[i];
    end = b;
  }
}

}  // namespace zerotrain::zero
