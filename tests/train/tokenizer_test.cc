// Byte tokenizer round trips (all 256 byte values, end-of-text) and
// tokenize_text_file: shard split sizes, contents, and refusals.
#include "train/data/tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "train/data/dataset.h"
#include "train/data/shard.h"
#include "train/test_util.h"

namespace zerotrain::train {
namespace {

using testing::TempDir;

std::string all_bytes(int repeats) {
  std::string s;
  for (int r = 0; r < repeats; ++r) {
    for (int b = 0; b < 256; ++b) s.push_back(static_cast<char>((b * 151 + r) & 0xFF));
  }
  return s;
}

TEST(ByteTokenizer, RoundTripsEveryByteValueIncludingNulAndFF) {
  ByteTokenizer tok;
  EXPECT_EQ(tok.vocab_size(), 256u);
  const std::string text = all_bytes(3) + std::string("\0\xff\0", 3);
  const std::vector<uint32_t> ids = tok.encode(text);
  ASSERT_EQ(ids.size(), text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    EXPECT_EQ(ids[i], static_cast<unsigned char>(text[i]));
  }
  EXPECT_EQ(ids[ids.size() - 2], 255u);
  EXPECT_EQ(ids.back(), 0u);
  auto back = tok.decode(ids);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, text);
}

TEST(ByteTokenizer, EndOfTextSeparatesDocumentsAndDecodesToNothing) {
  ByteTokenizer tok(/*end_of_text=*/true);
  EXPECT_EQ(tok.vocab_size(), 257u);
  std::vector<uint32_t> ids;
  tok.encode_document("ab", &ids);
  tok.encode_document("c", &ids);
  EXPECT_EQ(ids, (std::vector<uint32_t>{'a', 'b', kEndOfTextToken, 'c', kEndOfTextToken}));
  EXPECT_EQ(tok.encode("ab"), (std::vector<uint32_t>{'a', 'b'}));
  auto text = tok.decode(ids);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "abc");
}

TEST(ByteTokenizer, DecodeRejectsIdsOutsideVocabularyNamingIndex) {
  auto plain = ByteTokenizer().decode(std::vector<uint32_t>{104, 105, 10, 256});
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plain.status().message().find("token 256 at index 3"), std::string::npos);
  auto eot = ByteTokenizer(true).decode(std::vector<uint32_t>{257});
  ASSERT_FALSE(eot.ok());
  EXPECT_NE(eot.status().message().find("vocabulary of 257"), std::string::npos);
}

TEST(ValTokenCount, IsFloorOfFraction) {
  EXPECT_EQ(val_token_count(1000, 0.1), 100u);
  EXPECT_EQ(val_token_count(999, 0.1), 99u);
  EXPECT_EQ(val_token_count(9, 0.1), 0u);
  EXPECT_EQ(val_token_count(1000, 0.0), 0u);
}

TEST(TokenizeTextFile, WritesTrainAndValShardsWhoseConcatenationIsTheInput) {
  TempDir dir;
  const std::string input = dir.file("in.txt"), out = dir.file("out");
  const std::string text = all_bytes(4).substr(0, 1000);
  testing::write_bytes(input, std::vector<unsigned char>(text.begin(), text.end()));
  TokenizeSummary summary;
  Status st = tokenize_text_file(input, out, 300, 0.1, &summary);
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(summary.train_tokens, 900u);
  EXPECT_EQ(summary.val_tokens, 100u);
  EXPECT_EQ(summary.files,
            (std::vector<std::string>{out + "/train_000000.bin", out + "/train_000001.bin",
                                      out + "/train_000002.bin", out + "/val_000000.bin"}));
  auto first = TokenShard::open(out + "/train_000000.bin");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->header().vocab_size, 256u);
  EXPECT_EQ(first->header().token_bytes, 2u);
  EXPECT_EQ(first->size(), 300u);

  auto train = TokenDataset::open_split(out, "train");
  auto val = TokenDataset::open_split(out, "val");
  ASSERT_TRUE(train.ok() && val.ok());
  ASSERT_EQ(train->size(), 900u);
  ASSERT_EQ(val->size(), 100u);
  std::vector<int32_t> all(1000);
  train->copy(0, 900, all.data());  // spans the shard boundaries at 300 and 600
  val->copy(0, 100, all.data() + 900);
  for (size_t i = 0; i < text.size(); ++i)
    ASSERT_EQ(all[i], static_cast<unsigned char>(text[i])) << i;
}

TEST(TokenizeTextFile, RefusesMissingEmptyInputsAndBadArguments) {
  TempDir dir;
  Status st = tokenize_text_file(dir.file("missing.txt"), dir.file("o"), 100, 0.1);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find(dir.file("missing.txt")), std::string::npos);

  testing::write_bytes(dir.file("empty.txt"), {});
  st = tokenize_text_file(dir.file("empty.txt"), dir.file("o"), 100, 0.1);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("is empty"), std::string::npos);

  st = tokenize_text_file(dir.path(), dir.file("o"), 100, 0.1);  // a directory
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find(dir.path()), std::string::npos);

  testing::write_bytes(dir.file("in.txt"), {'a', 'b', 'c'});
  st = tokenize_text_file(dir.file("in.txt"), dir.file("o"), 0, 0.1);
  EXPECT_NE(st.message().find("shard_tokens must be >= 1"), std::string::npos) << st.message();
  st = tokenize_text_file(dir.file("in.txt"), dir.file("o"), 10, 1.0);
  EXPECT_NE(st.message().find("val_fraction 1.000000 is outside [0, 1)"), std::string::npos)
      << st.message();
}

TEST(TokenizeTextFile, RefusesDirectoryThatAlreadyHoldsShards) {
  TempDir dir;
  testing::write_bytes(dir.file("in.txt"), {'h', 'e', 'l', 'l', 'o'});
  ASSERT_TRUE(tokenize_text_file(dir.file("in.txt"), dir.file("o"), 2, 0.0).ok());
  EXPECT_TRUE(std::filesystem::exists(dir.file("o/train_000002.bin")));  // 2 + 2 + 1 tokens
  EXPECT_FALSE(std::filesystem::exists(dir.file("o/val_000000.bin")));   // no val tokens
  Status st = tokenize_text_file(dir.file("in.txt"), dir.file("o"), 2, 0.0);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("already holds token shards"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(dir.file("o")), std::string::npos);
}

TEST(TokenDataset, OpenSplitWithoutShardsIsNotFoundAndVocabMismatchIsRefused) {
  TempDir dir;
  auto none = TokenDataset::open_split(dir.path(), "train");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("no train_*.bin shards in " + dir.path()),
            std::string::npos);

  ASSERT_TRUE(write_token_shard(dir.file("a.bin"), std::vector<uint32_t>{1}, 256).ok());
  ASSERT_TRUE(write_token_shard(dir.file("b.bin"), std::vector<uint32_t>{1}, 512).ok());
  auto mixed = TokenDataset::open({dir.file("a.bin"), dir.file("b.bin")});
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find(dir.file("b.bin") + " has vocab_size 512 but " +
                                          dir.file("a.bin") + " has 256"),
            std::string::npos)
      << mixed.status().message();
}

}  // namespace
}  // namespace zerotrain::train
