// PartitionArray: storage and fp32 conversions (see partition_array.h).
#include "zero/partition_array.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "device/cpu/convert.h"
#include "core/half.h"

namespace zerotrain::zero {

void to_fp32(DType dtype, const std::byte* src, size_t n, float* out) {
  if (n == 0) return;
  switch (dtype) {
    case DType::kFloat32:
      std::memcpy(out, src, n * sizeof(float));
      return;
    case DType::kBFloat16:
      device::cpu::bf16_to_fp32({reinterpret_cast<const BFloat16*>(src), n}, {out, n});
      return;
    case DType::kFloat16:
      device::cpu::fp16_to_fp32({reinterpret_cast<const Half*>(src), n}, {out, n});
      return;
  }
}

void from_fp32(DType dtype, const float* in, size_t n, std::byte* dst) {
  if (n == 0) return;
  switch (dtype) {
    case DType::kFloat32:
      std::memmove(dst, in, n * sizeof(float));
      return;
    case DType::kBFloat16:
      device::cpu::fp32_to_bf16({in, n}, {reinterpret_cast<BFloat16*>(dst), n});
      return;
    case DType::kFloat16:
      device::cpu::fp32_to_fp16({in, n}, {reinterpret_cast<Half*>(dst), n});
      return;
  }
}

StatusOr<PartitionArray> PartitionArray::allocate(DType dtype, size_t n, bool host,
                                                  bool pin) {
  PartitionArray a;
  a.dtype_ = dtype;
  a.size_ = n;
  a.on_host_ = host;
  const size_t bytes = n * dtype_size(dtype);
  if (host) {
    ZT_ASSIGN_OR_RETURN(a.host_, device::cpu::HostBuffer<std::byte>::allocate(bytes, pin));
    a.data_ = a.host_.data();
  } else {
    ZT_ASSIGN_OR_RETURN(a.device_, device::cpu::AlignedBuffer<std::byte>::allocate(bytes));
    a.data_ = a.device_.data();
  }
  return a;
}

std::span<float> PartitionArray::f32() {
  ZT_CHECK(dtype_ == DType::kFloat32, "PartitionArray::f32 on a ",
           dtype_name(dtype_), " array");
  return {reinterpret_cast<float*>(data_), size_};
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

}  // namespace

void PartitionArray::read(size_t off, size_t n, float* out) const {
  ZT_CHECK(off + n <= size_, "PartitionArray::read past the end");
  for_blocks(n, [&](size_t b, size_t len) { to_fp32(dtype_, at(off + b), len, out + b); });
}

void PartitionArray::write(size_t off, std::span<const float> in) {
  ZT_CHECK(off + in.size() <= size_, "PartitionArray::write past the end");
  for_blocks(in.size(),
             [&](size_t b, size_t len) { from_fp32(dtype_, in.data() + b, len, at(off + b)); });
}

void PartitionArray::add(size_t off, std::span<const float> in) {
  ZT_CHECK(off + in.size() <= size_, "PartitionArray::add past the end");
  if (dtype_ == DType::kFloat32) {
    float* dst = reinterpret_cast<float*>(at(off));
    for_blocks(in.size(), [&](size_t b, size_t len) {
      for (size_t i = b; i < b + len; ++i) dst[i] += in[i];
    });
    return;
  }
  for_blocks(in.size(), [&](size_t b0, size_t n) {
    constexpr size_t kBlock = 2048;
    std::array<float, kBlock> tmp;
    for (size_t b = b0; b < b0 + n; b += kBlock) {
      const size_t len = std::min(kBlock, b0 + n - b);
      to_fp32(dtype_, at(off + b), len, tmp.data());
      for (size_t i = 0; i < len; ++i) tmp[i] += in[b + i];
      from_fp32(dtype_, tmp.data(), len, at(off + b));
    }
  });
}

void PartitionArray::fill_zero() {
  if (size_ > 0) std::memset(data_, 0, size_ * dtype_size(dtype_));
}

namespace {

constexpr int64_t kRoundBlock = 4096;  // elements per conversion block (fits L1 twice)

template <typename Half16, void (*kDown)(std::span<const float>, std::span<Half16>),
          void (*kUp)(std::span<const Half16>, std::span<float>)>
void round_blocks(std::span<const float> in, std::span<float> out) {
  const auto n = static_cast<int64_t>(in.size());
  const int64_t blocks = (n + kRoundBlock - 1) / kRoundBlock;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    std::array<Half16, kRoundBlock> tmp;
    const int64_t begin = b * kRoundBlock;
    const auto len = static_cast<size_t>(std::min(kRoundBlock, n - begin));
    kDown(in.subspan(static_cast<size_t>(begin), len), std::span<Half16>(tmp.data(), len));
    kUp(std::span<const Half16>(tmp.data(), len), out.subspan(static_cast<size_t>(begin), len));
  }
}

}  // namespace

void round_to(DType dtype, std::span<const float> in, std::span<float> out) {
  ZT_CHECK(in.size() == out.size(), "round_to: ", in.size(), " vs ", out.size(), " elements");
  switch (dtype) {
    case DType::kFloat32:
      if (in.data() != out.data() && !in.empty())
        std::memmove(out.data(), in.data(), in.size_bytes());
      return;
    case DType::kBFloat16:
      round_blocks<BFloat16, device::cpu::fp32_to_bf16, device::cpu::bf16_to_fp32>(in, out);
      return;
    case DType::kFloat16:
      round_blocks<Half, device::cpu::fp32_to_fp16, device::cpu::fp16_to_fp32>(in, out);
      return;
  }
}

}  // namespace zerotrain::zero
