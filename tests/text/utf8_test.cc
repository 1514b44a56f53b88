// UTF-8 helpers against the Unicode Standard's own examples and GPT-2's
// published byte-level alphabet.
#include "text/utf8.h"

#include <gtest/gtest.h>

#include <set>

namespace zerotrain::text {
namespace {

TEST(Utf8, LossyDecodeReplacesMaximalSubpartsAsTheStandardShows) {
  // Unicode 15, §3.9, Table 3-8: "a F1 80 80 E1 80 C2 b 80 c 80 BF d"
  // decodes to a, FFFD, FFFD, FFFD, b, FFFD, c, FFFD, FFFD, d.
  const std::string in =
      "a\xF1\x80\x80\xE1\x80\xC2"
      "b\x80"
      "c\x80\xBF"
      "d";
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(utf8_lossy(in), "a" + r + r + r + "b" + r + "c" + r + r + "d");
  EXPECT_EQ(utf8_lossy("h\xC3\xA9llo \xF0\x9F\x98\x80"), "h\xC3\xA9llo \xF0\x9F\x98\x80");
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), r + r + r) << "a surrogate is three subparts";
  EXPECT_EQ(utf8_lossy("\xC0\xAF"), r + r) << "overlong";
}

TEST(Utf8, ValidityAndSequenceLengths) {
  EXPECT_TRUE(is_valid_utf8("plain \xE2\x96\x81 \xF0\x9F\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xE2\x96"));          // truncated
  EXPECT_EQ(utf8_sequence_length("\xE2\x96\x81", 0), 3u);
  EXPECT_EQ(utf8_sequence_length("\x80", 0), 0u);
  std::string s;
  append_utf8(s, 0x1F600);
  EXPECT_EQ(s, "\xF0\x9F\x98\x80");
}

TEST(Utf8, CompletePrefixHoldsBackOnlyAnUnfinishedCharacter) {
  EXPECT_EQ(complete_utf8_prefix("ab\xF0\x9F\x98"), 2u);
  EXPECT_EQ(complete_utf8_prefix("ab\xF0\x9F\x98\x80"), 6u);
  EXPECT_EQ(complete_utf8_prefix("ab\xC3"), 2u);
  EXPECT_EQ(complete_utf8_prefix("ab\x80"), 3u) << "a stray byte will never complete";
  EXPECT_EQ(complete_utf8_prefix("ab\xE2\x41"), 4u) << "broken, print it";
}

TEST(Utf8, ByteLevelAlphabetIsGpt2s) {
  // GPT-2's bytes_to_unicode: '!'..'~' themselves, space -> U+0120 'Ġ',
  // newline -> U+010A 'Ċ', 0xAD -> U+0143, 0 -> U+0100.
  EXPECT_EQ(byte_level_char('A'), "A");
  EXPECT_EQ(byte_level_char(' '), "\xC4\xA0");
  EXPECT_EQ(byte_level_char('\n'), "\xC4\x8A");
  EXPECT_EQ(byte_level_char(0xAD), "\xC5\x83");
  EXPECT_EQ(byte_level_char(0), "\xC4\x80");
  std::set<std::string> distinct;
  for (int b = 0; b < 256; ++b) {
    distinct.insert(byte_level_char(static_cast<uint8_t>(b)));
    EXPECT_EQ(byte_level_byte(byte_level_char(static_cast<uint8_t>(b))), b);
  }
  EXPECT_EQ(distinct.size(), 256u);
  EXPECT_EQ(to_byte_level("a b"),
            "a\xC4\xA0"
            "b");
}

}  // namespace
}  // namespace zerotrain::text
