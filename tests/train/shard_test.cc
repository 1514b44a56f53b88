// Token shard format: CRC-32 reference values, uint16/uint32 round trips,
// the documented byte layout, and refusal of damaged files (flipped bytes,
// truncation, trailing bytes, wrong magic, wrong version) naming the path.
#include "train/data/shard.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/crc32.h"
#include "train/test_util.h"

namespace zerotrain::train {
namespace {

using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

uint32_t le32(const std::vector<unsigned char>& b, size_t off) {
  return uint32_t{b[off]} | uint32_t{b[off + 1]} << 8 | uint32_t{b[off + 2]} << 16 |
         uint32_t{b[off + 3]} << 24;
}
void put_le32(std::vector<unsigned char>* b, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*b)[off + i] = static_cast<unsigned char>(v >> (8 * i));
}
// Recomputes the header CRC (field at 36, computed with that field zeroed).
void reseal_header(std::vector<unsigned char>* b) {
  put_le32(b, 36, 0);
  put_le32(b, 36, crc32(b->data(), 64));
}

TEST(Crc32, MatchesStandardCheckValues) {
  EXPECT_EQ(crc32("123456789", 9), 0xCBF43926u);
  EXPECT_EQ(crc32("", 0), 0u);
  EXPECT_EQ(crc32("The quick brown fox jumps over the lazy dog", 43), 0x414FA339u);
}

TEST(Crc32, IncrementalEqualsOneShotAtEverySplit) {
  std::string s;
  for (int i = 0; i < 100; ++i) s.push_back(static_cast<char>(i * 37 + 11));
  const uint32_t whole = crc32(s.data(), s.size());
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    EXPECT_EQ(crc32_update(crc32(s.data(), cut), s.data() + cut, s.size() - cut), whole) << cut;
  }
}

TEST(Shard, RoundTripsUint16WithDocumentedLayout) {
  TempDir dir;
  const std::string path = dir.file("a.bin");
  const std::vector<uint32_t> tokens = {0, 1, 255, 256, 40000, 65535, 7};
  ASSERT_TRUE(write_token_shard(path, tokens, 65536).ok());
  const auto bytes = read_bytes(path);
  ASSERT_EQ(bytes.size(), 64u + 2 * tokens.size());
  EXPECT_EQ(std::memcmp(bytes.data(), "ZTTOKENS", 8), 0);
  EXPECT_EQ(le32(bytes, 8), 1u) << "no mask, no blocks: version 1, as older readers read";
  EXPECT_EQ(le32(bytes, 12), 64u);
  EXPECT_EQ(le32(bytes, 16), 2u);
  EXPECT_EQ(le32(bytes, 20), 65536u);
  EXPECT_EQ(le32(bytes, 24), tokens.size());
  EXPECT_EQ(le32(bytes, 28), 0u);  // high word of the count
  EXPECT_EQ(le32(bytes, 32), crc32(bytes.data() + 64, bytes.size() - 64));
  EXPECT_EQ(bytes[64 + 2 * 4], 0x40);  // 40000 = 0x9C40, little-endian
  EXPECT_EQ(bytes[64 + 2 * 4 + 1], 0x9C);

  auto shard = TokenShard::open(path);
  ASSERT_TRUE(shard.ok()) << shard.status().to_string();
  EXPECT_EQ(shard->header().token_bytes, 2u);
  ASSERT_EQ(shard->size(), tokens.size());
  std::vector<int32_t> out(tokens.size());
  shard->copy(0, tokens.size(), out.data());
  for (size_t i = 0; i < tokens.size(); ++i) {
    EXPECT_EQ(shard->token(i), tokens[i]);
    EXPECT_EQ(out[i], static_cast<int32_t>(tokens[i]));
  }
}

TEST(Shard, RoundTripsUint32ForLargeVocabAndOnRequest) {
  TempDir dir;
  const std::vector<uint32_t> tokens = {0, 65536, 99999, 123, 0x7FFFFFFE};
  ASSERT_TRUE(write_token_shard(dir.file("big.bin"), tokens, 0x7FFFFFFF).ok());
  auto big = TokenShard::open(dir.file("big.bin"));
  ASSERT_TRUE(big.ok()) << big.status().to_string();
  EXPECT_EQ(big->header().token_bytes, 4u);
  EXPECT_EQ(read_bytes(dir.file("big.bin")).size(), 64u + 4 * tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) EXPECT_EQ(big->token(i), tokens[i]);

  const std::vector<uint32_t> bytes = {0, 255, 17};
  ASSERT_TRUE(write_token_shard(dir.file("wide.bin"), bytes, 256, 4).ok());
  auto wide = TokenShard::open(dir.file("wide.bin"));
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(wide->header().token_bytes, 4u);
  EXPECT_EQ(wide->token(1), 255u);
}

TEST(Shard, EmptyShardRoundTrips) {
  TempDir dir;
  ASSERT_TRUE(write_token_shard(dir.file("e.bin"), {}, 256).ok());
  auto shard = TokenShard::open(dir.file("e.bin"));
  ASSERT_TRUE(shard.ok()) << shard.status().to_string();
  EXPECT_EQ(shard->size(), 0u);
}

TEST(Shard, WriterRejectsTokenOutsideVocabAndNarrowWidth) {
  TempDir dir;
  Status st = write_token_shard(dir.file("x.bin"), std::vector<uint32_t>{1, 2, 256}, 256);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("token 256 at index 2"), std::string::npos) << st.message();
  st = write_token_shard(dir.file("x.bin"), std::vector<uint32_t>{1}, 70000, 2);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("70000"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.bin")));
}

TEST(Shard, WriteReplacesAtomicallyAndLeavesNoTempFile) {
  TempDir dir;
  const std::string path = dir.file("s.bin");
  ASSERT_TRUE(write_token_shard(path, std::vector<uint32_t>{1, 2, 3}, 256).ok());
  ASSERT_TRUE(write_token_shard(path, std::vector<uint32_t>{9}, 256).ok());
  auto shard = TokenShard::open(path);
  ASSERT_TRUE(shard.ok());
  EXPECT_EQ(shard->size(), 1u);
  EXPECT_EQ(shard->token(0), 9u);
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) entries += e.exists();
  EXPECT_EQ(entries, 1);
}

class DamagedShard : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("train_000000.bin");
    std::vector<uint32_t> tokens(1000);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint32_t>(i * 7 % 256);
    ASSERT_TRUE(write_token_shard(path_, tokens, 256).ok());
    bytes_ = read_bytes(path_);
  }
  // Writes the modified bytes and expects open() to fail with `code` and a
  // message holding the path and `reason`.
  void expect_refused(StatusCode code, const std::string& reason) {
    write_bytes(path_, bytes_);
    auto shard = TokenShard::open(path_);
    ASSERT_FALSE(shard.ok());
    EXPECT_EQ(shard.status().code(), code) << shard.status().to_string();
    EXPECT_NE(shard.status().message().find(path_), std::string::npos) << shard.status().message();
    EXPECT_NE(shard.status().message().find(reason), std::string::npos) << shard.status().message();
  }

  TempDir dir_;
  std::string path_;
  std::vector<unsigned char> bytes_;
};

TEST_F(DamagedShard, FlippedPayloadByteIsCorruption) {
  bytes_[64 + 501] ^= 0x01;
  expect_refused(StatusCode::kCorruption, "payload checksum mismatch");
}

TEST_F(DamagedShard, FlippedHeaderByteIsCorruption) {
  bytes_[20] ^= 0x02;  // vocab_size 256 -> 258
  expect_refused(StatusCode::kCorruption, "header checksum mismatch");
}

TEST_F(DamagedShard, TruncatedPayloadIsCorruption) {
  bytes_.pop_back();
  expect_refused(StatusCode::kCorruption,
                 "truncated: header says 1000 tokens of 2 bytes, file has 1999");
}

TEST_F(DamagedShard, TruncatedHeaderIsCorruption) {
  bytes_.resize(40);
  expect_refused(StatusCode::kCorruption, "truncated header (40 bytes");
}

TEST_F(DamagedShard, TrailingBytesAreCorruption) {
  bytes_.push_back(0);
  bytes_.push_back(0);
  expect_refused(StatusCode::kCorruption, "trailing bytes");
}

TEST_F(DamagedShard, WrongMagicIsInvalidArgument) {
  bytes_[0] = 'X';
  expect_refused(StatusCode::kInvalidArgument, "not a zerotrain token shard");
}

TEST_F(DamagedShard, WrongVersionIsInvalidArgumentNamingBothVersions) {
  put_le32(&bytes_, 8, 3);
  reseal_header(&bytes_);
  expect_refused(StatusCode::kInvalidArgument,
                 "format version 3, this build reads versions 1 and 2");
}

// Version 2: flags (bit 0: a loss mask follows the tokens, one bit a token,
// LSB first) at 40 and the block size at 44, by the documented layout.
TEST(Shard, LossMaskRoundTripsWithDocumentedLayout) {
  TempDir dir;
  const std::string path = dir.file("m.bin");
  const std::vector<uint32_t> tokens = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
  const std::vector<uint8_t> trained = {0, 1, 1, 0, 0, 0, 0, 1, 1, 0};
  ASSERT_TRUE(
      write_token_shard(path, tokens, 100, 0, {.trained = trained, .block_tokens = 5}).ok());
  const auto bytes = read_bytes(path);
  ASSERT_EQ(bytes.size(), 64u + 2 * 10 + 2);
  EXPECT_EQ(le32(bytes, 8), 2u);
  EXPECT_EQ(le32(bytes, 40), 1u);
  EXPECT_EQ(le32(bytes, 44), 5u);
  EXPECT_EQ(bytes[84], 0b10000110);  // tokens 1, 2, 7
  EXPECT_EQ(bytes[85], 0b00000001);  // token 8
  auto shard = TokenShard::open(path);
  ASSERT_TRUE(shard.ok()) << shard.status().to_string();
  EXPECT_TRUE(shard->header().has_loss_mask);
  EXPECT_EQ(shard->header().block_tokens, 5u);
  std::vector<uint8_t> got(7);
  shard->copy_trained(2, 7, got.data());
  EXPECT_EQ(got, std::vector<uint8_t>(trained.begin() + 2, trained.begin() + 9));
  // Losing the mask's last byte is a truncation, named.
  std::vector<unsigned char> cut(bytes.begin(), bytes.end() - 1);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(cut.data()), cut.size());
  auto bad = TokenShard::open(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("truncated"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("2 bytes of masks"), std::string::npos);
  EXPECT_FALSE(
      write_token_shard(path, tokens, 100, 0, {.trained = std::span(trained).first(3)}).ok());
}

TEST_F(DamagedShard, TokenOutsideVocabIsCorruptionEvenWithValidChecksums) {
  put_le32(&bytes_, 20, 100);  // tokens go up to 255
  reseal_header(&bytes_);
  expect_refused(StatusCode::kCorruption, "is outside vocab_size 100");
}

TEST(Shard, MissingFileIsNotFoundNamingPath) {
  TempDir dir;
  auto shard = TokenShard::open(dir.file("nope.bin"));
  ASSERT_FALSE(shard.ok());
  EXPECT_EQ(shard.status().code(), StatusCode::kNotFound);
  EXPECT_NE(shard.status().message().find(dir.file("nope.bin")), std::string::npos);
}

}  // namespace
}  // namespace zerotrain::train
