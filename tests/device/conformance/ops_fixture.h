// The Ops conformance fixture: one test body runs against every device this
// build has, with the CPU ops on host memory (host_ops()) as the oracle.
// Devices: "guarded_cpu" (always: the CPU kernels behind tagged
// addresses, which proves the harness and the seam) and "cuda" (when the
// build has the backend; without a GPU the case is skipped with the
// reason, never passed silently).
//
//   TEST_P(OpsConformance, GeluForward) {
//     auto x = randn(4096, 1);
//     auto dx = upload(x);
//     auto dy = alloc<float>(x.size());
//     ASSERT_OK(ops().gelu_forward(dy.ptr(), dx.ptr(), x.size()));
//     std::vector<float> ref(x.size());
//     ASSERT_OK(host().gelu_forward(ref.data(), x.data(), x.size()));
//     expect_close(download(dy), ref, kFp32Tol, "gelu");
//   }
//
// Thread-safety: gtest's (one test at a time).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "device/cpu/guarded_device.h"
#include "device/device.h"
#include "device/ops.h"

namespace zerotrain::device::testing {

// ‖got − ref‖ / ‖ref‖ bounds (../shared/reference/cuda.md §6): fp32 work
// against the CPU's fp32, and anything with bf16 operands or outputs.
inline constexpr double kFp32Tol = 1e-5;
inline constexpr double kBf16Tol = 1e-2;

// Device memory holding n elements of T.
template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(Buffer b, size_t n) : buf_(std::move(b)), n_(n) {}
  T* ptr() const { return n_ == 0 ? nullptr : buf_.as<T>(); }
  size_t size() const { return n_; }
  const Buffer& buffer() const { return buf_; }

 private:
  Buffer buf_;
  size_t n_ = 0;
};

inline std::vector<float> randn(size_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}
inline std::vector<BFloat16> to_bf16(const std::vector<float>& v) {
  std::vector<BFloat16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = to_bfloat16(v[i]);
  return out;
}
inline std::vector<float> to_f32(const std::vector<BFloat16>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = to_float(v[i]);
  return out;
}

// Fails (naming `what` and the first bad index) on a NaN/inf where the
// reference is finite, or when the relative L2 error exceeds tol.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& ref, double tol,
                         const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isfinite(ref[i]) && !std::isfinite(got[i])) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", reference " << ref[i];
      return;
    }
    const double d = static_cast<double>(got[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  const double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  EXPECT_LE(rel, tol) << what << ": relative L2 error " << rel << " over " << got.size()
                      << " elements";
}
inline void expect_close(const std::vector<BFloat16>& got, const std::vector<BFloat16>& ref,
                         double tol, const std::string& what) {
  expect_close(to_f32(got), to_f32(ref), tol, what);
}

class OpsConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string& name = GetParam();
    if (name == "cuda") {
      if (!cuda_built()) GTEST_SKIP() << "cuda: this build has no CUDA backend (ZEROTRAIN_CUDA)";
      std::string why;
      if (cuda_device_count(&why) == 0) GTEST_SKIP() << "cuda: no GPU here (" << why << ")";
      auto d = make_device(DeviceType::kCuda, 0);
      ASSERT_TRUE(d.ok()) << d.status().to_string();
      device_ = std::move(*d);
    } else {
      device_ = cpu::make_guarded_device();
    }
  }
  Device& dev() { return *device_; }
  const Ops& ops() { return device_->ops(); }
  const Ops& host() { return host_ops(); }

  template <typename T>
  DeviceArray<T> alloc(size_t n) {
    auto b = device_->allocate(std::max<size_t>(n, 1) * sizeof(T), MemoryCategory::kOther, "test");
    EXPECT_TRUE(b.ok()) << b.status().to_string();
    return DeviceArray<T>(std::move(*b), n);
  }
  template <typename T>
  DeviceArray<T> upload(const std::vector<T>& v) {
    DeviceArray<T> a = alloc<T>(v.size());
    if (!v.empty()) {
      Status s = device_->copy(a.ptr(), v.data(), v.size() * sizeof(T));
      EXPECT_TRUE(s.ok()) << s.to_string();
    }
    return a;
  }
  template <typename T>
  std::vector<T> download(const DeviceArray<T>& a) {
    std::vector<T> v(a.size());
    if (!v.empty()) {
      Status s = device_->copy(v.data(), a.ptr(), v.size() * sizeof(T));
      EXPECT_TRUE(s.ok()) << s.to_string();
    }
    return v;
  }
  // A device tensor view of a (for the Tensor-taking element ops).
  template <typename T>
  Tensor tensor(const DeviceArray<T>& a, DType dtype) {
    return a.buffer().tensor(dtype, 0, a.size());
  }

 private:
  std::unique_ptr<Device> device_;
};

#define ZT_INSTANTIATE_OPS_CONFORMANCE(Suite)                                        \
  INSTANTIATE_TEST_SUITE_P(Devices, Suite, ::testing::Values("guarded_cpu", "cuda"), \
                           [](const auto& info) { return info.param; })

}  // namespace zerotrain::device::testing
