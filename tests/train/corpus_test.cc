// Generated corpus: determinism per seed, alphabet, statistical structure
// (bigram entropy far below 8 bits/byte), and that its facts are true
// (sums, differences, products, stories whose numbers add up).
#include "train/data/corpus.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>
#include <regex>
#include <unordered_map>

#include "train/data/corpus_grammar.h"
#include "train/data/tokenizer.h"
#include "train/test_util.h"

namespace zerotrain::train {
namespace {

// H(X_{i+1} | X_i) in bits per byte: the cross-entropy a bigram model fitted
// to the text achieves on it.
double bigram_entropy_bits(const std::string& text) {
  std::vector<double> pair(256 * 256, 0.0), first(256, 0.0);
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    const auto a = static_cast<unsigned char>(text[i]), b = static_cast<unsigned char>(text[i + 1]);
    pair[a * 256 + b] += 1;
    first[a] += 1;
  }
  double h = 0, n = static_cast<double>(text.size() - 1);
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      const double c = pair[a * 256 + b];
      if (c > 0) h -= c / n * std::log2(c / first[a]);
    }
  }
  return h;
}

// H(X_i | previous k bytes) in bits per byte, from empirical counts.
double context_entropy_bits(const std::string& text, size_t k) {
  std::unordered_map<std::string, std::array<uint32_t, 256>> next;
  for (size_t i = k; i < text.size(); ++i) {
    next[text.substr(i - k, k)][static_cast<unsigned char>(text[i])] += 1;
  }
  double h = 0, n = static_cast<double>(text.size() - k);
  for (const auto& [ctx, counts] : next) {
    double total = 0;
    for (uint32_t c : counts) total += c;
    for (uint32_t c : counts) {
      if (c > 0) h -= c / n * std::log2(c / total);
    }
  }
  return h;
}

double unigram_entropy_bits(const std::string& text) {
  std::array<double, 256> count{};
  for (char c : text) count[static_cast<unsigned char>(c)] += 1;
  double h = 0;
  for (double c : count) {
    if (c > 0) h -= c / text.size() * std::log2(c / text.size());
  }
  return h;
}

TEST(Corpus, SameSeedSameBytesDifferentSeedDifferentBytes) {
  const std::string a = generate_corpus({.seed = 1, .target_bytes = 50000});
  const std::string b = generate_corpus({.seed = 1, .target_bytes = 50000});
  const std::string c = generate_corpus({.seed = 2, .target_bytes = 50000});
  EXPECT_EQ(a.size(), 50000u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // A longer corpus extends the shorter one (the stream does not depend on the size).
  EXPECT_EQ(generate_corpus({.seed = 1, .target_bytes = 80000}).substr(0, 50000), a);
}

TEST(Corpus, DefaultSizeIsAFewHundredKilobytesOfPlainText) {
  const std::string text = generate_corpus({});
  EXPECT_EQ(text.size(), CorpusOptions{}.target_bytes);
  EXPECT_GE(text.size(), 200000u);
  for (char c : text) {
    ASSERT_TRUE((c >= 'a' && c <= 'z') || c == ' ' || c == ',' || c == '.' || c == ':' ||
                c == '?' || c == '\n')
        << "byte " << static_cast<int>(static_cast<unsigned char>(c));
  }
}

TEST(Corpus, BigramEntropyIsFarBelowEightBitsPerByte) {
  const std::string text = generate_corpus({});
  const double h1 = unigram_entropy_bits(text), h2 = bigram_entropy_bits(text);
  const double h5 = context_entropy_bits(text, 4);
  std::printf("unigram %.3f, bigram %.3f, 4-byte context %.3f bits/byte\n", h1, h2, h5);
  EXPECT_LT(h1, 4.5);
  // A bigram model alone gets below 2.5 nats/token (3.6 bits); we hold it to
  // 2.2 nats (3.2 bits). Longer contexts predict much more: this is the
  // structure a small GPT learns.
  EXPECT_LT(h2, 3.2);
  EXPECT_LT(h2, h1 - 1.0);
  EXPECT_LT(h5, 1.0);
}

TEST(Corpus, NumberWordsSpellNumbers) {
  EXPECT_EQ(corpus_detail::number_words(0), "zero");
  EXPECT_EQ(corpus_detail::number_words(13), "thirteen");
  EXPECT_EQ(corpus_detail::number_words(40), "forty");
  EXPECT_EQ(corpus_detail::number_words(42), "forty two");
  EXPECT_EQ(corpus_detail::number_words(107), "one hundred and seven");
  EXPECT_EQ(corpus_detail::number_words(999), "nine hundred and ninety nine");
}

TEST(Corpus, ArithmeticFactsAndStoriesAreTrue) {
  std::map<std::string, int> value;
  for (int n = 0; n <= 200; ++n) value[corpus_detail::number_words(n)] = n;
  const std::string text = generate_corpus({.seed = 9, .target_bytes = 60000});
  const std::string num = "([a-z]+(?: [a-z]+)?)";
  const std::regex fact(num + " (plus|minus|times) " + num + "(?: is|\\? answer:) " + num + "\\.");
  const std::regex story("has " + num + " [a-z]+\\. (?:she|he) gives " + num +
                         " to [a-z]+, so [a-z]+ has " + num + " [a-z]+ left\\.");
  int facts = 0, stories = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), fact), end; it != end; ++it) {
    const std::smatch& m = *it;
    if (!value.count(m[1]) || !value.count(m[3]) || !value.count(m[4])) continue;  // cut at start
    const int a = value[m[1]], b = value[m[3]], r = value[m[4]];
    const int want = m[2] == "plus" ? a + b : m[2] == "minus" ? a - b : a * b;
    ASSERT_EQ(r, want) << m[0];
    ++facts;
  }
  for (std::sregex_iterator it(text.begin(), text.end(), story), end; it != end; ++it) {
    const std::smatch& m = *it;
    ASSERT_EQ(value.at(m[1]) - value.at(m[2]), value.at(m[3])) << m[0];
    ++stories;
  }
  EXPECT_GT(facts, 300);
  EXPECT_GT(stories, 100);
}

TEST(Corpus, DefaultSplitsAreByteTokensWithValAtTheEnd) {
  const CorpusOptions options{.seed = 3, .target_bytes = 10000};
  auto splits = default_corpus_splits(options, 0.1);
  ASSERT_TRUE(splits.ok());
  EXPECT_EQ(splits->train->size(), 9000u);
  EXPECT_EQ(splits->val->size(), 1000u);
  EXPECT_EQ(splits->train->vocab_size(), 256u);
  const std::string text = generate_corpus(options);
  std::vector<int32_t> head(5), tail(5);
  splits->train->copy(0, 5, head.data());
  splits->val->copy(995, 5, tail.data());
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(head[i], static_cast<unsigned char>(text[i]));
    EXPECT_EQ(tail[i], static_cast<unsigned char>(text[9995 + i]));
  }
  EXPECT_EQ(default_corpus_splits(options, -0.5).status().code(), StatusCode::kInvalidArgument);
}

TEST(Corpus, WrittenShardsHoldTheGeneratedText) {
  testing::TempDir dir;
  const CorpusOptions options{.seed = 4, .target_bytes = 5000};
  ASSERT_TRUE(write_default_corpus(dir.path(), options, 2048, 0.2).ok());
  auto train = TokenDataset::open_split(dir.path(), "train");
  auto val = TokenDataset::open_split(dir.path(), "val");
  ASSERT_TRUE(train.ok() && val.ok());
  ASSERT_EQ(train->size(), 4000u);
  ASSERT_EQ(val->size(), 1000u);
  const std::string text = generate_corpus(options);
  std::vector<int32_t> got(5000);
  train->copy(0, 4000, got.data());
  val->copy(0, 1000, got.data() + 4000);
  for (size_t i = 0; i < text.size(); ++i) ASSERT_EQ(got[i], static_cast<unsigned char>(text[i]));
}

}  // namespace
}  // namespace zerotrain::train
