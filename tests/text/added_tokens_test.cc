// Added-token splitting by hand-worked cases (HF's rules: leftmost, then
// longest; lstrip/rstrip absorb whitespace; single_word needs boundaries).
#include "text/added_tokens.h"

#include <gtest/gtest.h>

namespace zerotrain::text {
namespace {

std::string render(const std::vector<AddedTokens::Segment>& segs) {
  std::string s;
  for (const auto& seg : segs) {
    if (seg.id) {
      s.append("[").append(std::to_string(*seg.id)).append("]");
    } else {
      s.append("\"").append(seg.text).append("\"");
    }
  }
  return s;
}

TEST(AddedTokens, LeftmostLongestAndStripping) {
  AddedTokens t;
  t.add({.id = 1, .content = "<s>", .special = true});
  t.add({.id = 2, .content = "<s><s>"});
  t.add({.id = 3, .content = "<mask>", .lstrip = true, .rstrip = true});
  t.add({.id = 4, .content = "cat", .single_word = true});
  EXPECT_EQ(render(t.split("a<s><s>b<s>")), "\"a\"[2]\"b\"[1]");
  EXPECT_EQ(render(t.split("x  <mask>  y")), "\"x\"[3]\"y\"");
  EXPECT_EQ(render(t.split("cat concat cat.")), "[4]\" concat \"[4]\".\"");
  EXPECT_EQ(render(t.split("plain")), "\"plain\"");
  const auto segs = t.split("ab<s>cd");
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(segs[2].offset, 5u);
}

}  // namespace
}  // namespace zerotrain::text
