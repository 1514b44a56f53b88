// HF tokenizers' pre-tokenizers (tokenizer.json "pre_tokenizer"): how a
// normalized stretch of text is cut into the words BPE encodes one by one.
// Supported: Sequence, Split (regex or string; Isolated, Removed,
// MergedWithPrevious, MergedWithNext, Contiguous; invert), ByteLevel
// (GPT-2's pattern, add_prefix_space; must come last, and makes the words
// byte-level), Metaspace (replacement, prepend_scheme always/first/never or
// the older add_prefix_space, split) and Digits. Anything else is refused at
// load, by name.
//
//   ZT_ASSIGN_OR_RETURN(PreTokenizer p, PreTokenizer::from_json(j["pre_tokenizer"],
//   "pre_tokenizer")); std::vector<std::string> words; ZT_RETURN_IF_ERROR(p.split("Hello world",
//   /*at_start=*/true, words));  // "Hello", " world"
//
// Thread-safety: immutable after from_json; split is const and reentrant.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "core/status.h"
#include "text/regex.h"

namespace zerotrain::text {

// GPT-2's pre-tokenization pattern (ByteLevel with use_regex).
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class PreTokenizer {
 public:
  // A null (or absent) pre-tokenizer leaves the text one word.
  static StatusOr<PreTokenizer> from_json(const nlohmann::json& j, const std::string& where);
  // GPT-2's: ByteLevel(add_prefix_space=false, use_regex=true).
  static PreTokenizer gpt2_byte_level();

  // Appends the words of `text` to `out`. `at_start`: the text begins the
  // input (Metaspace's prepend_scheme "first").
  Status split(std::string text, bool at_start, std::vector<std::string>& out) const;
  // True when words come out byte-level (a ByteLevel step): BPE then starts
  // from one symbol per byte.
  bool byte_level() const { return byte_level_; }

 private:
  enum class Behavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };
  struct Split {
    std::optional<Regex> regex;
    std::string literal;
    Behavior behavior;
    bool invert;
  };
  struct ByteLevel {
    bool add_prefix_space;
    std::optional<Regex> regex;
  };
  enum class Prepend { kAlways, kFirst, kNever };
  struct Metaspace {
    std::string replacement;
    Prepend prepend;
    bool split;
  };
  using Step = std::variant<Split, ByteLevel, Metaspace>;
  Status add(const nlohmann::json& j, const std::string& where);
  static Status split_one(const Split& s, const std::string& text, std::vector<std::string>& out);

  std::vector<Step> steps_;
  bool byte_level_ = false;
};

}  // namespace zerotrain::text
