// Tensor / ConstTensor: a non-owning, device-tagged (pointer, dtype, numel)
// view. `device` names the Device whose memory `data` is (null: host
// memory, which any host code may read). Code outside device/ never
// dereferences a tensor with a device: it hands it to that device's Ops
// or copies (device/device.h), so the same code runs on a GPU.
//
//   Tensor w = buffer.tensor(DType::kBFloat16);       // device-tagged
//   Tensor host = make_view(std::span<float>(v));      // host memory
//   std::span<float> s = host.as<float>();             // aborts if the dtype differs
//
// Thread-safety: plain values; the viewed memory is the caller's to guard.
#pragma once

#include <cstddef>
#include <span>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "core/half.h"
#include "core/status.h"

namespace zerotrain {

namespace device {
class Device;  // device/device.h; core only carries the tag
}

template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kFloat32;
};
template <>
struct DTypeOf<Half> {
  static constexpr DType value = DType::kFloat16;
};
template <>
struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::kBFloat16;
};
template <typename T>
inline constexpr DType kDTypeOf = DTypeOf<std::remove_const_t<T>>::value;

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::kFloat32;
  size_t numel = 0;
  device::Device* device = nullptr;  // null: host memory

  Tensor() = default;
  Tensor(void* d, DType t, size_t n, device::Device* dev = nullptr)
      : data(d), dtype(t), numel(n), device(dev) {}
  // A host span as a tensor (implicit: host code passes spans).
  template <typename T>
  Tensor(std::span<T> s)  // NOLINT
      : data(s.data()), dtype(kDTypeOf<T>), numel(s.size()) {}
  template <typename T>
  Tensor(std::vector<T>& v)  // NOLINT: host vectors likewise
      : data(v.data()), dtype(kDTypeOf<T>), numel(v.size()) {}

  bool empty() const { return numel == 0; }
  bool on_host() const { return device == nullptr; }
  size_t size_bytes() const { return numel * dtype_size(dtype); }
  // Elements [offset, offset + count): same dtype and device.
  Tensor slice(size_t offset, size_t count) const {
    ZT_CHECK(offset + count <= numel, "Tensor::slice [", offset, ", ", offset + count, ") of ",
             numel);
    return {static_cast<char*>(data) + offset * dtype_size(dtype), dtype, count, device};
  }
  // Typed span for host code: host memory only (a device's memory is the
  // device's to read), dtype checked.
  template <typename T>
  std::span<T> as() const {
    ZT_CHECK(dtype == kDTypeOf<T>, "tensor holds ", dtype_name(dtype), ", asked for ",
             dtype_name(kDTypeOf<T>));
    return {static_cast<T*>(data), numel};
  }
  // The pointer as T* for an op (device or host), dtype checked.
  template <typename T>
  T* ptr() const {
    ZT_CHECK(dtype == kDTypeOf<T> || numel == 0, "tensor holds ", dtype_name(dtype), ", asked for ",
             dtype_name(kDTypeOf<T>));
    return static_cast<T*>(data);
  }
};

struct ConstTensor {
  const void* data = nullptr;
  DType dtype = DType::kFloat32;
  size_t numel = 0;
  device::Device* device = nullptr;

  ConstTensor() = default;
  ConstTensor(const void* d, DType t, size_t n, device::Device* dev = nullptr)
      : data(d), dtype(t), numel(n), device(dev) {}
  ConstTensor(const Tensor& v)  // NOLINT: a mutable tensor reads as const
      : data(v.data), dtype(v.dtype), numel(v.numel), device(v.device) {}
  template <typename T>
  ConstTensor(std::span<T> s)  // NOLINT: host spans
      : data(s.data()), dtype(kDTypeOf<T>), numel(s.size()) {}
  template <typename T>
  ConstTensor(const std::vector<T>& v)  // NOLINT: host vectors
      : data(v.data()), dtype(kDTypeOf<T>), numel(v.size()) {}
  bool empty() const { return numel == 0; }
  bool on_host() const { return device == nullptr; }
  size_t size_bytes() const { return numel * dtype_size(dtype); }
  ConstTensor slice(size_t offset, size_t count) const {
    ZT_CHECK(offset + count <= numel, "ConstTensor::slice [", offset, ", ", offset + count, ") of ",
             numel);
    return {static_cast<const char*>(data) + offset * dtype_size(dtype), dtype, count, device};
  }
  template <typename T>
  std::span<const T> as() const {
    ZT_CHECK(dtype == kDTypeOf<T>, "tensor holds ", dtype_name(dtype), ", asked for ",
             dtype_name(kDTypeOf<T>));
    return {static_cast<const T*>(data), numel};
  }
  template <typename T>
  const T* ptr() const {
    ZT_CHECK(dtype == kDTypeOf<T> || numel == 0, "tensor holds ", dtype_name(dtype), ", asked for ",
             dtype_name(kDTypeOf<T>));
    return static_cast<const T*>(data);
  }
};

// Views of spans: host memory unless a device is given.
template <typename T>
Tensor make_view(std::span<T> s, device::Device* device = nullptr) {
  return Tensor{s.data(), kDTypeOf<T>, s.size(), device};
}
template <typename T>
ConstTensor make_view(std::span<const T> s, device::Device* device = nullptr) {
  return ConstTensor{s.data(), kDTypeOf<T>, s.size(), device};
}

}  // namespace zerotrain
