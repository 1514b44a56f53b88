// HF's added tokens (tokenizer.json "added_tokens"): strings such as
// "<|endoftext|>" or "<s>" that are cut out of the input before the
// normalizer and pre-tokenizer see it, leftmost-longest, and map straight to
// their ids. lstrip / rstrip absorb the whitespace beside a match;
// single_word matches only between non-word characters.
//
//   AddedTokens added;
//   added.add({.id = 50256, .content = "<|endoftext|>", .special = true});
//   for (const auto& seg : added.split("a<|endoftext|>b")) ...  // "a", 50256, "b"
//
// Thread-safety: immutable after the adds; split is const and reentrant.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zerotrain::text {

struct AddedToken {
  uint32_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false, rstrip = false, single_word = false;
};

class AddedTokens {
 public:
  // A later token with the same content replaces the earlier one.
  void add(AddedToken token);

  struct Segment {
    std::string_view text;       // when id is empty
    std::optional<uint32_t> id;  // an added token
    size_t offset = 0;           // where the segment starts in the input
  };
  std::vector<Segment> split(std::string_view text) const;

  const AddedToken* find_id(uint32_t id) const;
  const AddedToken* find_content(std::string_view content) const;
  const std::vector<AddedToken>& all() const { return tokens_; }

 private:
  std::vector<AddedToken> tokens_;
  // Per first byte, token indices longest first.
  std::array<std::vector<uint32_t>, 256> by_first_byte_;
};

}  // namespace zerotrain::text
