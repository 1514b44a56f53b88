// 4-bit blockwise quantization (device/quant4.h) against an independent
// PyTorch implementation of bitsandbytes' reference backend
// (bnb_reference.py): the packed codes, the absmaxes (or the double-quant
// indices, second-level absmaxes and offset) and the dynamic map equal it
// byte for byte, and the dequantized tensor bit for bit, on random tensors
// with a tail block, an odd length, an all-zero block and an outlier; the
// CPU kernel equals the reference decoder at every SIMD level and on ranges
// that start and end mid-block and on odd elements.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <random>

#include "checkpoint/test_util.h"
#include "device/cpu/cpu_features.h"
#include "device/cpu/dequant4.h"
#include "integration/subprocess.h"

namespace zerotrain::device {
namespace {

using checkpoint::testing::TempDir;

template <typename T>
std::vector<T> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  EXPECT_TRUE(f.good()) << path;
  std::vector<T> v(static_cast<size_t>(f.tellg()) / sizeof(T));
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
  return v;
}

template <typename T>
void expect_same_bits(const std::vector<T>& got, const std::vector<T>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(T)), 0)
        << what << "[" << i << "]: " << +got[i] << " vs " << +want[i];
}

struct Case {
  const char* name;
  Quant4Type type;
  int64_t blocksize;
  bool double_quant;
  int64_t numel;
};

class Quant4Reference : public ::testing::TestWithParam<Case> {};

TEST_P(Quant4Reference, EqualsBitsandbytesBitForBit) {
  const Case& c = GetParam();
  std::mt19937 gen(static_cast<unsigned>(c.numel));
  std::normal_distribution<float> n(0.0f, 0.02f);
  std::vector<float> x(static_cast<size_t>(c.numel));
  for (float& v : x) v = n(gen);
  // An all-zero block (0·(1/0) is NaN: bnb's argmin gives code 0), an
  // outlier, and exact code values (ties of the nearest search).
  if (c.numel >= 4 * c.blocksize) {
    std::fill_n(x.begin() + c.blocksize, c.blocksize, 0.0f);
    x[static_cast<size_t>(2 * c.blocksize + 3)] = 3.5f;
    for (int k = 0; k < 16; ++k)
      x[static_cast<size_t>(3 * c.blocksize + k)] = quant4_code(c.type)[static_cast<size_t>(k)];
  }
  TempDir dir;
  std::ofstream(dir.file("in.f32"), std::ios::binary)
      .write(reinterpret_cast<const char*>(x.data()), static_cast<std::streamsize>(x.size() * 4));
  std::vector<std::string> argv{"/usr/bin/python3",
                                std::string(ZT_SOURCE_DIR) + "/tests/device/quant4/bnb_reference.py",
                                "tensor", dir.file("in.f32"), dir.file("out"), "--type",
                                quant4_type_name(c.type), "--blocksize",
                                std::to_string(c.blocksize)};
  if (c.double_quant) argv.push_back("--double-quant");
  const auto r = zerotrain::testing::run_process(argv, std::chrono::seconds(120));
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const Quant4Host q = quantize_4bit(x.data(), c.numel,
                                     {.type = c.type, .blocksize = c.blocksize,
                                      .double_quant = c.double_quant});
  const std::string out = dir.file("out") + "/";
  expect_same_bits(q.packed, read_all<uint8_t>(out + "packed.u8"), "packed");
  const std::vector<float> code8(dynamic8_code().begin(), dynamic8_code().end());
  expect_same_bits(code8, read_all<float>(out + "code8.f32"), "dynamic map");
  if (c.double_quant) {
    expect_same_bits(q.absmax_q, read_all<uint8_t>(out + "absmax_q.u8"), "absmax_q");
    expect_same_bits(q.absmax2, read_all<float>(out + "absmax2.f32"), "absmax2");
    expect_same_bits(std::vector<float>{q.offset}, read_all<float>(out + "offset.f32"), "offset");
  } else {
    expect_same_bits(q.absmax, read_all<float>(out + "absmax.f32"), "absmax");
  }
  const std::vector<float> want = read_all<float>(out + "dequant.f32");
  std::vector<float> got(x.size());
  dequantize_4bit_reference(q.view(), 0, c.numel, got.data());
  expect_same_bits(got, want, "reference decoder");

  using cpu::SimdLevel;
  for (SimdLevel level : {SimdLevel::kPortable, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    cpu::ScopedSimdLevel scoped(level);
    const std::string path(cpu::simd_level_name(scoped.active()));
    std::fill(got.begin(), got.end(), -7.0f);
    cpu::dequantize_4bit(q.view(), 0, c.numel, got.data());
    expect_same_bits(got, want, "kernel " + path);
    // A range from an odd element mid-block to an element mid-block.
    const int64_t lo = std::min<int64_t>(c.numel - 1, c.blocksize / 2 + 1);
    const int64_t hi = std::max(lo, c.numel - c.blocksize / 3);
    std::vector<float> part(static_cast<size_t>(hi - lo));
    cpu::dequantize_4bit(q.view(), lo, hi, part.data());
    expect_same_bits(part, std::vector<float>(want.begin() + lo, want.begin() + hi),
                     "range kernel " + path);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Quant4Reference,
    ::testing::Values(Case{"nf4_64", Quant4Type::kNf4, 64, false, 64 * 37},
                      Case{"nf4_64_odd_tail", Quant4Type::kNf4, 64, false, 64 * 20 + 27},
                      Case{"nf4_64_double_quant", Quant4Type::kNf4, 64, true, 64 * 600 + 5},
                      Case{"nf4_128_double_quant", Quant4Type::kNf4, 128, true, 128 * 300},
                      Case{"fp4_64", Quant4Type::kFp4, 64, false, 64 * 41 + 1},
                      Case{"fp4_64_double_quant", Quant4Type::kFp4, 64, true, 64 * 513}),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

TEST(Quant4, StorageIsAboutFourPointOneTwoSevenBitsAParameterWithDoubleQuant) {
  // The QLoRA paper's accounting: 4 bits + 8/64 + 32/(64·256).
  const int64_t n = 64 * 256 * 8;
  std::vector<float> x(static_cast<size_t>(n), 0.5f);
  const Quant4Host dq = quantize_4bit(x.data(), n, {.double_quant = true});
  EXPECT_EQ(dq.bytes() * 8, n * 4 + n / 64 * 8 + n / (64 * 256) * 32);
  const Quant4Host plain = quantize_4bit(x.data(), n, {});
  EXPECT_EQ(plain.bytes() * 8, n * 4 + n / 64 * 32);
}

}  // namespace
}  // namespace zerotrain::device
