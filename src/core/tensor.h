// TensorView / ConstTensorView: non-owning (pointer, dtype, numel) views for
// code that handles several dtypes through one signature (conversion,
// optimizer low-precision copies, checkpoint I/O). Typed access checks the
// dtype.
//
//   AlignedBuffer<BFloat16> w16(n);
//   TensorView v = make_view(w16.span());          // dtype kBFloat16
//   std::span<BFloat16> s = v.as<BFloat16>();      // aborts if dtype differs
//
// Thread-safety: plain values; the viewed memory is the caller's to guard.
#pragma once

#include <cstddef>
#include <span>

#include "core/status.h"
#include "core/dtype.h"
#include "core/half.h"

namespace zerotrain {

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

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kFloat32;
  size_t numel = 0;

  bool empty() const { return numel == 0; }
  size_t size_bytes() const { return numel * dtype_size(dtype); }
  template <typename T>
  std::span<T> as() const {
    ZT_CHECK(dtype == kDTypeOf<T>, "view holds ", dtype_name(dtype), ", asked for ",
             dtype_name(kDTypeOf<T>));
    return {static_cast<T*>(data), numel};
  }
};

struct ConstTensorView {
  const void* data = nullptr;
  DType dtype = DType::kFloat32;
  size_t numel = 0;

  ConstTensorView() = default;
  ConstTensorView(const void* d, DType t, size_t n) : data(d), dtype(t), numel(n) {}
  ConstTensorView(const TensorView& v)  // NOLINT: a mutable view reads as const
      : data(v.data), dtype(v.dtype), numel(v.numel) {}

  bool empty() const { return numel == 0; }
  size_t size_bytes() const { return numel * dtype_size(dtype); }
  template <typename T>
  std::span<const T> as() const {
    ZT_CHECK(dtype == kDTypeOf<T>, "view holds ", dtype_name(dtype), ", asked for ",
             dtype_name(kDTypeOf<T>));
    return {static_cast<const T*>(data), numel};
  }
};

template <typename T>
TensorView make_view(std::span<T> s) {
  return TensorView{s.data(), kDTypeOf<T>, s.size()};
}
template <typename T>
ConstTensorView make_view(std::span<const T> s) {
  return ConstTensorView{s.data(), kDTypeOf<T>, s.size()};
}

}  // namespace zerotrain
