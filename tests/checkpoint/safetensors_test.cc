// Safetensors writer and reader: exact fp32 round trips, bf16/fp16 rounding
// to nearest even, files built by hand from the spec, chunked writes,
// atomicity, and refusal of corrupted or unsupported files.
#include "checkpoint/safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "checkpoint/test_util.h"
#include "core/half.h"

namespace zerotrain::checkpoint {
namespace {

using testing::raw;
using testing::read_bytes;
using testing::safetensors_bytes;
using testing::TempDir;
using testing::write_bytes;
using zerotrain::DType;

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<float> read_all(const SafetensorsFile& f, const std::string& name) {
  const SafetensorsTensor* t = f.find(name);
  EXPECT_NE(t, nullptr) << name;
  if (t == nullptr) return {};
  std::vector<float> out(static_cast<size_t>(t->numel()));
  const Status st = f.read_f32(*t, 0, t->numel(), out.data());
  EXPECT_TRUE(st.ok()) << st.to_string();
  return out;
}

// Writes `values` as one tensor of `dtype` and shape {n}.
void write_one(const std::string& path, DType dtype, const std::vector<float>& values) {
  auto w = SafetensorsWriter::create(
      path, {{.name = "x", .dtype = dtype, .shape = {static_cast<int64_t>(values.size())}}});
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  ASSERT_TRUE(w->write(values).ok());
  ASSERT_TRUE(w->finish().ok());
}

TEST(Safetensors, Fp32RoundTripIsExactWithShapesOffsetsAndMetadata) {
  TempDir dir;
  const std::string path = dir.file("a.safetensors");
  const std::vector<float> a = random_floats(6, 1), c = random_floats(5, 2);
  const float scalar = -0.125f;
  {
    auto w = SafetensorsWriter::create(path,
                                       {{.name = "a", .shape = {2, 3}},
                                        {.name = "empty", .shape = {0, 4}},
                                        {.name = "s", .shape = {}},
                                        {.name = "c", .shape = {5}}},
                                       {{"format", "pt"}, {"step", "12"}});
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    ASSERT_TRUE(w->write(a).ok());
    ASSERT_TRUE(w->write({&scalar, 1}).ok());
    ASSERT_TRUE(w->write(c).ok());
    ASSERT_TRUE(w->finish().ok());
  }
  const std::string bytes = read_bytes(path);
  uint64_t header_length = 0;
  std::memcpy(&header_length, bytes.data(), 8);
  EXPECT_EQ((8 + header_length) % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + header_length + (6 + 1 + 5) * 4);

  auto f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const std::map<std::string, std::string> want_meta{{"format", "pt"}, {"step", "12"}};
  EXPECT_EQ(f->metadata(), want_meta);
  ASSERT_EQ(f->tensors().size(), 4u);
  EXPECT_EQ(f->find("a")->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f->find("a")->begin, 0);
  EXPECT_EQ(f->find("a")->end, 24);
  EXPECT_EQ(f->find("s")->numel(), 1);
  EXPECT_EQ(f->find("empty")->numel(), 0);
  EXPECT_EQ(f->find("c")->begin, 28);
  EXPECT_EQ(f->find("missing"), nullptr);
  EXPECT_EQ(read_all(*f, "a"), a);
  EXPECT_EQ(read_all(*f, "s"), std::vector<float>{scalar});
  EXPECT_EQ(read_all(*f, "c"), c);
  float middle[2];
  ASSERT_TRUE(f->read_f32(*f->find("c"), 2, 2, middle).ok());
  EXPECT_EQ(middle[0], c[2]);
  EXPECT_EQ(middle[1], c[3]);
}

TEST(Safetensors, Bf16AndF16RoundToNearestEvenAsConvertDoes) {
  TempDir dir;
  std::vector<float> values = random_floats(40000, 3);  // > one conversion block
  // Exact ties: bf16 keeps 8 significant bits, fp16 11; both go to even.
  values.insert(values.end(), {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-11f,
                               1.0f + 3 * 0x1p-11f, 1e6f, -0.0f});
  for (DType dtype : {DType::kBFloat16, DType::kFloat16}) {
    const std::string path = dir.file(std::string(safetensors_dtype_name(dtype)));
    write_one(path, dtype, values);
    const std::string bytes = read_bytes(path);
    auto f = SafetensorsFile::open(path);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    const std::vector<float> back = read_all(*f, "x");
    ASSERT_EQ(back.size(), values.size());
    const size_t data_start = bytes.size() - values.size() * 2;
    for (size_t i = 0; i < values.size(); ++i) {
      const uint16_t want =
          dtype == DType::kBFloat16 ? fp32_to_bf16_bits(values[i]) : fp32_to_fp16_bits(values[i]);
      uint16_t stored = 0;
      std::memcpy(&stored, bytes.data() + data_start + 2 * i, 2);
      ASSERT_EQ(stored, want) << "element " << i;
      const float want_f32 =
          dtype == DType::kBFloat16 ? bf16_bits_to_fp32(want) : fp16_bits_to_fp32(want);
      ASSERT_EQ(back[i], want_f32) << "element " << i;
    }
    const size_t n = values.size();
    if (dtype == DType::kBFloat16) {
      EXPECT_EQ(back[n - 6], 1.0f);
      EXPECT_EQ(back[n - 5], 1.0f + 0x1p-6f);
      EXPECT_EQ(back[n - 2], 999424.0f);
    } else {
      EXPECT_EQ(back[n - 4], 1.0f);
      EXPECT_EQ(back[n - 3], 1.0f + 0x1p-9f);
      EXPECT_EQ(back[n - 2], INFINITY);  // above fp16's max 65504
    }
    EXPECT_TRUE(std::signbit(back[n - 1]));
  }
}

TEST(Safetensors, ReadsAFileBuiltByHandFromTheSpec) {
  TempDir dir;
  const std::string path = dir.file("hand.safetensors");
  // Keys out of data order, metadata last, three dtypes, padded header.
  const std::string header =
      R"({"c":{"dtype":"F16","shape":[],"data_offsets":[14,16]},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"BF16","shape":[1,3],"data_offsets":[8,14]},)"
      R"("__metadata__":{"format":"pt"}})";
  const std::string data = raw<float>({1.5f, -2.0f}) +
                           raw<uint16_t>({0x3f80, 0xc000, 0x4049}) + raw<uint16_t>({0x3555});
  write_bytes(path, safetensors_bytes(header, data));

  auto f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  ASSERT_EQ(f->tensors().size(), 3u);
  EXPECT_EQ(f->tensors()[0].name, "a");  // data order
  EXPECT_EQ(f->tensors()[1].name, "b");
  EXPECT_EQ(f->tensors()[2].name, "c");
  EXPECT_EQ(f->tensors()[1].dtype, DType::kBFloat16);
  EXPECT_EQ(f->tensors()[1].shape, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(f->metadata().at("format"), "pt");
  EXPECT_EQ(read_all(*f, "a"), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(read_all(*f, "b"), (std::vector<float>{1.0f, -2.0f, 3.140625f}));
  EXPECT_EQ(read_all(*f, "c"), (std::vector<float>{0.333251953125f}));
  float last = 0;
  ASSERT_TRUE(f->read_f32(*f->find("b"), 2, 1, &last).ok());
  EXPECT_EQ(last, 3.140625f);
  const Status outside = f->read_f32(*f->find("b"), 2, 2, &last);
  EXPECT_EQ(outside.code(), StatusCode::kInvalidArgument) << outside.to_string();
}

TEST(Safetensors, ChunkedWritesGiveTheSameFileAsOneWrite) {
  TempDir dir;
  const std::vector<float> values = random_floats(1000, 4);
  const std::vector<SafetensorsTensor> specs = {
      {.name = "w", .dtype = DType::kBFloat16, .shape = {30, 20}},
      {.name = "b", .dtype = DType::kFloat32, .shape = {400}}};
  auto write = [&](const std::string& path, size_t chunk) {
    auto w = SafetensorsWriter::create(path, specs);
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    for (size_t i = 0; i < values.size(); i += chunk) {
      const size_t n = std::min(chunk, values.size() - i);
      ASSERT_TRUE(w->write(std::span<const float>(values).subspan(i, n)).ok());
    }
    ASSERT_TRUE(w->finish().ok());
  };
  write(dir.file("one"), values.size());
  write(dir.file("chunked"), 7);  // chunks straddle the tensor boundary at 600
  EXPECT_EQ(read_bytes(dir.file("one")), read_bytes(dir.file("chunked")));
}

TEST(Safetensors, FinishWithMissingElementsFailsNamingTheTensorAndLeavesNoFile) {
  TempDir dir;
  const std::string path = dir.file("short.safetensors");
  auto w = SafetensorsWriter::create(path, {{.name = "a", .shape = {4}}, {.name = "b", .shape = {3}}});
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->write(random_floats(5, 5)).ok());
  const Status st = w->finish();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("'b' got 1 of its 3"), std::string::npos) << st.message();
  EXPECT_TRUE(dir.entries().empty());  // neither the file nor its .tmp
  EXPECT_FALSE(w->write(random_floats(2, 6)).ok());
}

TEST(Safetensors, WritingPastTheLastTensorFails) {
  TempDir dir;
  auto w = SafetensorsWriter::create(dir.file("f"), {{.name = "a", .shape = {2}}});
  ASSERT_TRUE(w.ok());
  const Status st = w->write(random_floats(3, 7));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_TRUE(dir.entries().empty());
}

TEST(Safetensors, DestroyedWithoutFinishLeavesNoFileAndNoTemporary) {
  TempDir dir;
  {
    auto w = SafetensorsWriter::create(dir.file("f"), {{.name = "a", .shape = {2}}});
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->write(random_floats(2, 8)).ok());
    EXPECT_EQ(dir.entries().size(), 1u);  // the temporary, while writing
  }
  EXPECT_TRUE(dir.entries().empty());
}

TEST(Safetensors, CreateRefusesDuplicateNamesAndNegativeDimensions) {
  TempDir dir;
  auto dup = SafetensorsWriter::create(dir.file("f"), {{.name = "a", .shape = {1}},
                                                        {.name = "a", .shape = {1}}});
  EXPECT_EQ(dup.status().code(), StatusCode::kInvalidArgument);
  auto negative = SafetensorsWriter::create(dir.file("f"), {{.name = "a", .shape = {2, -1}}});
  EXPECT_EQ(negative.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(dir.entries().empty());
}

// `bytes` as a file must be refused with `code`, naming the path and
// containing `reason`.
void expect_refused(const std::string& bytes, StatusCode code, const std::string& reason) {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  write_bytes(path, bytes);
  auto f = SafetensorsFile::open(path);
  ASSERT_FALSE(f.ok()) << reason;
  EXPECT_EQ(f.status().code(), code) << f.status().to_string();
  EXPECT_NE(f.status().message().find(path), std::string::npos) << f.status().to_string();
  EXPECT_NE(f.status().message().find(reason), std::string::npos) << f.status().to_string();
}

std::string good_file() {
  return safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                           raw<float>({1, 2, 3}));
}

TEST(SafetensorsRefuses, TruncatedFiles) {
  const std::string good = good_file();
  expect_refused(good.substr(0, good.size() - 2), StatusCode::kCorruption, "runs beyond");
  expect_refused(good.substr(0, 20), StatusCode::kCorruption, "beyond the end of the");
  expect_refused(good.substr(0, 5), StatusCode::kCorruption, "truncated");
}

TEST(SafetensorsRefuses, AFlippedHeaderLength) {
  std::string bytes = good_file();
  bytes[5] ^= 0x10;
  expect_refused(bytes, StatusCode::kCorruption, "header length");
  bytes = good_file();
  bytes[0] ^= 0x01;  // one byte off: JSON cut short or data misaligned
  expect_refused(bytes, StatusCode::kCorruption, "");
}

TEST(SafetensorsRefuses, OverlappingGappedAndMissizedOffsets) {
  const std::string f32x3 = raw<float>({1, 2, 3});
  expect_refused(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                   R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                   f32x3),
                 StatusCode::kCorruption, "overlaps tensor 'a'");
  expect_refused(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                   R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                   f32x3),
                 StatusCode::kCorruption, "belong to no tensor");
  expect_refused(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                                   f32x3),
                 StatusCode::kCorruption, "needs 12");
  expect_refused(good_file() + std::string(8, '\0'), StatusCode::kCorruption, "data bytes");
}

TEST(SafetensorsRefuses, BadJsonAndAnUnsupportedDtype) {
  expect_refused(safetensors_bytes(R"({"a":{"dtype":"F32",)", raw<float>({1})),
                 StatusCode::kCorruption, "not valid JSON");
  expect_refused(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1]}})", raw<float>({1})),
                 StatusCode::kCorruption, "data_offsets");
  expect_refused(safetensors_bytes(R"({"d":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})",
                                   raw<double>({1.0})),
                 StatusCode::kInvalidArgument, "tensor 'd' has dtype F64");
}

TEST(SafetensorsRefuses, AMissingFileAsNotFound) {
  TempDir dir;
  auto f = SafetensorsFile::open(dir.file("nope"));
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace zerotrain::checkpoint
