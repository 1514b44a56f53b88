// The CUDA build finds the right libraries and behaves on a machine with no
// GPU: cuBLASLt, loaded on first use, is the headers' major version (a
// host-only call that needs no driver), while CPU work never maps it; no
// GPU is reported with the runtime's reason, a CUDA device is refused as
// Unavailable naming it, and --device auto falls back to the CPU while
// --device cuda is refused. On a GPU machine the same test checks the
// opposite: the device exists, is named, allocates zeroed memory.
#include <cublasLt.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "device/cuda/cublaslt_api.h"
#include "device/device.h"
#include "device/ops.h"

namespace zerotrain::device {
namespace {

bool mapped(const std::string& library) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(library) != std::string::npos) return true;
  return false;
}

// ctest runs each case in its own process: CPU work here must not load
// the GPU libraries (a CPU run of a CUDA build keeps its memory).
TEST(CudaSmoke, CpuWorkNeverMapsTheGpuLibraries) {
  if (cuda::cublaslt_loaded())
    GTEST_SKIP() << "an earlier case in this process loaded cuBLASLt (ctest runs each alone)";
  std::vector<float> x(1024, 1.5f);
  ASSERT_TRUE(host_ops().scale(Tensor{x.data(), DType::kFloat32, x.size(), nullptr}, 2.0f).ok());
  std::string why;
  cuda_device_count(&why);
  EXPECT_FALSE(cuda::cublaslt_loaded());
  EXPECT_FALSE(mapped("libcublasLt"));
  EXPECT_FALSE(mapped("libnccl"));
}

TEST(CudaSmoke, CublasLtLoadsOnFirstUseAndMatchesItsHeader) {
  EXPECT_TRUE(cuda_built());
  EXPECT_FALSE(mapped("libcublasLt"));
  StatusOr<const cuda::CublasLtApi*> lt = cuda::cublaslt_api();
  ASSERT_TRUE(lt.ok()) << lt.status().to_string();
  EXPECT_EQ((*lt)->get_version() / 10000, static_cast<size_t>(CUBLAS_VER_MAJOR));
  EXPECT_TRUE(cuda::cublaslt_loaded());
  EXPECT_TRUE(mapped("libcublasLt"));
}

TEST(CudaSmoke, DeviceCountAndChoiceFollowTheDriver) {
  std::string why;
  const int gpus = cuda_device_count(&why);
  if (gpus == 0) {
    EXPECT_FALSE(why.empty());
    StatusOr<std::unique_ptr<Device>> d = make_device(DeviceType::kCuda, 0);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(d.status().message().find(why), std::string::npos) << d.status().message();
    return;
  }
  StatusOr<std::unique_ptr<Device>> d = make_device(DeviceType::kCuda, 0);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ((*d)->type(), DeviceType::kCuda);
  EXPECT_EQ((*d)->name(), "cuda:0");
  EXPECT_EQ((*d)->host_address((*d).get()), nullptr);
  StatusOr<Buffer> b = (*d)->allocate(1 << 20, MemoryCategory::kBuffers, "probe");
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ((*d)->usage().of(MemoryCategory::kBuffers), 1 << 20);
  std::vector<float> back(256, 1.0f);
  ASSERT_TRUE((*d)->copy(back.data(), b->data(), back.size() * 4).ok());
  for (float x : back) ASSERT_EQ(x, 0.0f);  // allocations are zeroed
  EXPECT_EQ(make_device(DeviceType::kCuda, gpus).status().code(), StatusCode::kUnavailable);
}

TEST(CudaSmoke, ParseDeviceChoice) {
  EXPECT_EQ(*parse_device_choice("auto"), DeviceChoice::kAuto);
  EXPECT_EQ(*parse_device_choice("cuda"), DeviceChoice::kCuda);
  EXPECT_EQ(*parse_device_choice("cpu"), DeviceChoice::kCpu);
  EXPECT_EQ(parse_device_choice("gpu").status().code(), StatusCode::kInvalidArgument);
}

// The process-wide choice: once per process, so one test decides it.
TEST(CudaSmoke, SelectDefaultDevice) {
  if (cuda_device_count() == 0) {
    StatusOr<Device*> forced = select_default_device(DeviceChoice::kCuda, 0);
    ASSERT_FALSE(forced.ok());
    EXPECT_EQ(forced.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(forced.status().message().find("--device cuda"), std::string::npos);
    StatusOr<Device*> a = select_default_device(DeviceChoice::kAuto, 0);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ((*a)->type(), DeviceType::kCpu);
  } else {
    StatusOr<Device*> a = select_default_device(DeviceChoice::kAuto, 0);
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    EXPECT_EQ((*a)->type(), DeviceType::kCuda);
  }
  EXPECT_EQ(&default_device(), *select_default_device(DeviceChoice::kAuto, 0));
}

}  // namespace
}  // namespace zerotrain::device
