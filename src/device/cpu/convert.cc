// Bulk conversions: portable kernels and run-time dispatch.
#include "device/cpu/convert.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "device/cpu/convert_kernels.h"
#include "device/cpu/cpu_features.h"

namespace zerotrain::device::cpu {
namespace detail {

void fp32_to_fp16_portable(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = fp32_to_fp16_bits(src[i]);
}
void fp16_to_fp32_portable(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = fp16_bits_to_fp32(src[i]);
}
void fp32_to_bf16_portable(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = fp32_to_bf16_bits(src[i]);
}
void bf16_to_fp32_portable(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = bf16_bits_to_fp32(src[i]);
}

}  // namespace detail

namespace {

struct Kernels {
  detail::ToHalfFn to_fp16;
  detail::FromHalfFn from_fp16;
  detail::ToHalfFn to_bf16;
  detail::FromHalfFn from_bf16;
};

Kernels kernels() {
#if defined(__x86_64__)
  switch (active_simd_level()) {
    case SimdLevel::kAvx512:
      return {detail::fp32_to_fp16_avx512, detail::fp16_to_fp32_avx512, detail::fp32_to_bf16_avx512,
              detail::bf16_to_fp32_avx512};
    case SimdLevel::kAvx2:
      return {detail::fp32_to_fp16_avx2, detail::fp16_to_fp32_avx2, detail::fp32_to_bf16_avx2,
              detail::bf16_to_fp32_avx2};
    case SimdLevel::kPortable:
      break;
  }
#endif
  return {detail::fp32_to_fp16_portable, detail::fp16_to_fp32_portable,
          detail::fp32_to_bf16_portable, detail::bf16_to_fp32_portable};
}

uint16_t* bits(Half* p) { return reinterpret_cast<uint16_t*>(p); }
uint16_t* bits(BFloat16* p) { return reinterpret_cast<uint16_t*>(p); }
const uint16_t* bits(const Half* p) { return reinterpret_cast<const uint16_t*>(p); }
const uint16_t* bits(const BFloat16* p) { return reinterpret_cast<const uint16_t*>(p); }

// Any 16-bit -> fp32 -> other 16-bit, through a stack block.
void convert_16_via_fp32(ConstTensor src, Tensor dst) {
  constexpr size_t kBlock = 1024;
  float tmp[kBlock];
  const Kernels k = kernels();
  const auto* in = static_cast<const uint16_t*>(src.data);
  auto* out = static_cast<uint16_t*>(dst.data);
  for (size_t i = 0; i < src.numel; i += kBlock) {
    const size_t n = std::min(kBlock, src.numel - i);
    (src.dtype == DType::kFloat16 ? k.from_fp16 : k.from_bf16)(in + i, tmp, n);
    (dst.dtype == DType::kFloat16 ? k.to_fp16 : k.to_bf16)(tmp, out + i, n);
  }
}

}  // namespace

void fp32_to_fp16(std::span<const float> src, std::span<Half> dst) {
  ZT_CHECK(src.size() == dst.size(), "fp32_to_fp16: ", src.size(), " vs ", dst.size());
  kernels().to_fp16(src.data(), bits(dst.data()), src.size());
}

void fp16_to_fp32(std::span<const Half> src, std::span<float> dst) {
  ZT_CHECK(src.size() == dst.size(), "fp16_to_fp32: ", src.size(), " vs ", dst.size());
  kernels().from_fp16(bits(src.data()), dst.data(), src.size());
}

void fp32_to_bf16(std::span<const float> src, std::span<BFloat16> dst) {
  ZT_CHECK(src.size() == dst.size(), "fp32_to_bf16: ", src.size(), " vs ", dst.size());
  kernels().to_bf16(src.data(), bits(dst.data()), src.size());
}

void bf16_to_fp32(std::span<const BFloat16> src, std::span<float> dst) {
  ZT_CHECK(src.size() == dst.size(), "bf16_to_fp32: ", src.size(), " vs ", dst.size());
  kernels().from_bf16(bits(src.data()), dst.data(), src.size());
}

Status convert(ConstTensor src, Tensor dst) {
  if (src.numel != dst.numel) {
    return invalid_argument("convert " + std::string(dtype_name(src.dtype)) + " -> " +
                            std::string(dtype_name(dst.dtype)) + ": source has " +
                            std::to_string(src.numel) + " elements, destination " +
                            std::to_string(dst.numel));
  }
  if (src.numel == 0) return ok_status();
  if (src.dtype == dst.dtype) {
    std::memmove(dst.data, src.data, src.size_bytes());
    return ok_status();
  }
  if (src.dtype == DType::kFloat32) {
    if (dst.dtype == DType::kFloat16) fp32_to_fp16(src.as<float>(), dst.as<Half>());
    if (dst.dtype == DType::kBFloat16) fp32_to_bf16(src.as<float>(), dst.as<BFloat16>());
  } else if (dst.dtype == DType::kFloat32) {
    if (src.dtype == DType::kFloat16) fp16_to_fp32(src.as<Half>(), dst.as<float>());
    if (src.dtype == DType::kBFloat16) bf16_to_fp32(src.as<BFloat16>(), dst.as<float>());
  } else {
    convert_16_via_fp32(src, dst);
  }
  return ok_status();
}

}  // namespace zerotrain::device::cpu
