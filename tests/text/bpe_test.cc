// The BPE model against GPT-2's merge loop as OpenAI wrote it (find the
// lowest-ranked adjacent pair, merge every occurrence left to right,
// repeat), on random words over random merge tables; and byte fallback,
// unknown tokens and ignore_merges against hand-worked expectations.
#include "text/bpe.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace zerotrain::text {
namespace {

using Json = nlohmann::json;

// OpenAI's encoder.py bpe(), on strings.
std::vector<std::string> gpt2_bpe(const std::string& word,
                                  const std::map<std::pair<std::string, std::string>, int>& ranks) {
  std::vector<std::string> w;
  for (char c : word) w.emplace_back(1, c);
  while (w.size() > 1) {
    int best = INT32_MAX;
    std::pair<std::string, std::string> bigram;
    for (size_t i = 0; i + 1 < w.size(); ++i) {
      const auto it = ranks.find({w[i], w[i + 1]});
      if (it != ranks.end() && it->second < best) {
        best = it->second;
        bigram = it->first;
      }
    }
    if (best == INT32_MAX) break;
    std::vector<std::string> next;
    for (size_t i = 0; i < w.size();) {
      if (i + 1 < w.size() && w[i] == bigram.first && w[i + 1] == bigram.second) {
        next.push_back(w[i] + w[i + 1]);
        i += 2;
      } else {
        next.push_back(w[i++]);
      }
    }
    w = std::move(next);
  }
  return w;
}

TEST(Bpe, MatchesGpt2MergeLoopOnRandomTables) {
  std::mt19937 rng(7);
  for (int table = 0; table < 20; ++table) {
    Json vocab = Json::object();
    std::vector<std::string> tokens = {"a", "b", "c", "d"};
    for (const auto& t : tokens) vocab[t] = vocab.size();
    Json merges = Json::array();
    std::map<std::pair<std::string, std::string>, int> ranks;
    for (int m = 0; m < 60; ++m) {
      const std::string l = tokens[rng() % tokens.size()], r = tokens[rng() % tokens.size()];
      if (l.size() + r.size() > 8 || ranks.count({l, r})) continue;
      ranks[{l, r}] = static_cast<int>(ranks.size());
      merges.push_back(l + " " + r);
      if (!vocab.contains(l + r)) {
        vocab[l + r] = vocab.size();
        tokens.push_back(l + r);
      }
    }
    const Json j = {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}};
    auto bpe = BpeModel::from_json(j, "model");
    ASSERT_TRUE(bpe.ok()) << bpe.status().to_string();
    for (int w = 0; w < 200; ++w) {
      std::string word;
      const int n = 1 + static_cast<int>(rng() % 40);
      for (int k = 0; k < n; ++k) word += static_cast<char>('a' + rng() % 4);
      std::vector<uint32_t> ids;
      bpe->encode_word(word, false, ids);
      std::vector<std::string> got;
      for (uint32_t id : ids) got.push_back(bpe->id_to_token(id));
      ASSERT_EQ(got, gpt2_bpe(word, ranks)) << "table " << table << " word " << word;
    }
  }
}

TEST(Bpe, ByteFallbackUnknownAndIgnoreMerges) {
  Json vocab = {{"<unk>", 0}, {"a", 1}, {"b", 2}, {"ab", 3}, {"abab", 4}, {"ba", 5}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = 6 + b;
  }
  Json j = {{"type", "BPE"},
            {"vocab", vocab},
            {"merges", {"a b", "ab ab"}},
            {"unk_token", "<unk>"},
            {"byte_fallback", true}};
  auto fb = BpeModel::from_json(j, "model");
  ASSERT_TRUE(fb.ok()) << fb.status().to_string();
  std::vector<uint32_t> ids;
  fb->encode_word(
      "ab\xC3\xA9"
      "ab",
      false, ids);  // "abéab": é -> <0xC3> <0xA9>
  EXPECT_EQ(ids, (std::vector<uint32_t>{3, 6 + 0xC3, 6 + 0xA9, 3}));

  j["byte_fallback"] = false;
  j["fuse_unk"] = true;
  auto unk = BpeModel::from_json(j, "model");
  ASSERT_TRUE(unk.ok());
  ids.clear();
  unk->encode_word(
      "a\xC3\xA9\xC3\xA9"
      "b",
      false, ids);  // two unknown chars fuse into one <unk>
  EXPECT_EQ(ids, (std::vector<uint32_t>{1, 0, 2}));

  // "ba" is in the vocabulary but no merge makes it: BPE splits it, and
  // ignore_merges (Llama 3) takes it whole.
  ids.clear();
  unk->encode_word("ba", false, ids);
  EXPECT_EQ(ids, (std::vector<uint32_t>{2, 1}));
  j["ignore_merges"] = true;
  auto whole = BpeModel::from_json(j, "model");
  ASSERT_TRUE(whole.ok());
  ids.clear();
  whole->encode_word("ba", false, ids);
  EXPECT_EQ(ids, (std::vector<uint32_t>{5}));
}

TEST(Bpe, RefusesMergesOutsideTheVocabularyByName) {
  const Json j = {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}}}, {"merges", {"a b"}}};
  auto bad = BpeModel::from_json(j, "model");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("model.merges[0]: merge \"a b\" uses \"ab\""),
            std::string::npos)
      << bad.status().message();
  const Json drop = {
      {"type", "BPE"}, {"vocab", {{"a", 0}}}, {"merges", Json::array()}, {"dropout", 0.1}};
  EXPECT_FALSE(BpeModel::from_json(drop, "model").ok());
}

}  // namespace
}  // namespace zerotrain::text
