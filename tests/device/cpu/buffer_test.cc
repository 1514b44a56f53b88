// AlignedBuffer, Tensor and DType helpers.
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

#include "core/dtype.h"
#include "core/tensor.h"
#include "device/cpu/aligned_buffer.h"

namespace zerotrain::device::cpu {
namespace {

TEST(AlignedBufferTest, IsAlignedZeroedAndSized) {
  for (size_t n : {1, 3, 17, 1000}) {
    AlignedBuffer<float> buf(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buf.data()) % 64, 0u);
    EXPECT_EQ(buf.size(), n);
    EXPECT_EQ(buf.size_bytes(), 4 * n);
    for (float v : buf) EXPECT_EQ(v, 0.0f);
  }
  AlignedBuffer<Half> empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.data(), nullptr);
}

TEST(AlignedBufferTest, MoveTransfersOwnership) {
  AlignedBuffer<float> a(8);
  a[3] = 2.5f;
  float* p = a.data();
  AlignedBuffer<float> b = std::move(a);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b[3], 2.5f);
  EXPECT_EQ(a.size(), 0u);  // NOLINT: moved-from state is specified
  AlignedBuffer<float> c(2);
  c = std::move(b);
  EXPECT_EQ(c.size(), 8u);
  EXPECT_EQ(c.span()[3], 2.5f);
}

TEST(AlignedBufferTest, AllocateReportsOutOfMemoryAsStatus) {
  auto ok = AlignedBuffer<float>::allocate(16);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->size(), 16u);
  auto huge = AlignedBuffer<float>::allocate(size_t{1} << 62);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kInternal);
  EXPECT_NE(huge.status().message().find("out of memory allocating"), std::string::npos);
}

TEST(DTypeTest, SizesNamesAndParsing) {
  EXPECT_EQ(dtype_size(DType::kFloat32), 4u);
  EXPECT_EQ(dtype_size(DType::kFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::kBFloat16), 2u);
  EXPECT_EQ(dtype_name(DType::kBFloat16), "bf16");
  EXPECT_EQ(*parse_dtype("bfloat16"), DType::kBFloat16);
  EXPECT_EQ(*parse_dtype("half"), DType::kFloat16);
  EXPECT_EQ(*parse_dtype("fp32"), DType::kFloat32);
  auto bad = parse_dtype("fp8");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("\"fp8\""), std::string::npos);
}

TEST(TensorTest, TypedAccessKeepsDtypeAndBytes) {
  AlignedBuffer<BFloat16> buf(10);
  Tensor v = make_view(buf.span());
  EXPECT_EQ(v.dtype, DType::kBFloat16);
  EXPECT_EQ(v.size_bytes(), 20u);
  EXPECT_EQ(v.as<BFloat16>().data(), buf.data());
  ConstTensor c = v;
  EXPECT_EQ(c.as<BFloat16>().size(), 10u);
  EXPECT_DEATH((void)v.as<float>(), "tensor holds bf16, asked for fp32");
}

}  // namespace
}  // namespace zerotrain::device::cpu
