// HF tokenizers' normalizers (tokenizer.json "normalizer"): the text
// rewrites applied to every stretch of input between added tokens, before
// pre-tokenization. Supported: Sequence, Prepend, Replace (string or regex
// pattern), NFC/NFD/NFKC/NFKD (ICU), Lowercase, Strip. Anything else is
// refused at load, by name.
//
//   ZT_ASSIGN_OR_RETURN(Normalizer n, Normalizer::from_json(j["normalizer"], "normalizer"));
//   ZT_ASSIGN_OR_RETURN(std::string s, n.apply("Hello world"));  // "▁Hello▁world"
//
// Thread-safety: immutable after from_json; apply is const and reentrant.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/status.h"
#include "text/regex.h"

namespace zerotrain::text {

class Normalizer {
 public:
  // A null (or absent) normalizer is the identity.
  static StatusOr<Normalizer> from_json(const nlohmann::json& j, const std::string& where);

  // InvalidArgument if a Unicode form fails on the text (it is valid UTF-8
  // when the tokenizer calls this, so that is a bug in ICU's input).
  StatusOr<std::string> apply(std::string text) const;
  bool empty() const { return steps_.empty(); }

 private:
  struct Prepend {
    std::string prefix;
  };
  struct Replace {
    std::string literal;         // pattern {"String": ...}
    std::optional<Regex> regex;  // pattern {"Regex": ...}
    std::string content;
  };
  enum class Form { kNfc, kNfd, kNfkc, kNfkd };
  struct Unicode {
    Form form;
  };
  struct Lowercase {};
  struct Strip {
    bool left, right;
  };
  using Step = std::variant<Prepend, Replace, Unicode, Lowercase, Strip>;
  static Status add(const nlohmann::json& j, const std::string& where, std::vector<Step>& out);

  std::vector<Step> steps_;
};

// Replaces every occurrence of `from` (non-empty) in `text` with `to`.
std::string replace_all(std::string_view text, std::string_view from, std::string_view to);

}  // namespace zerotrain::text
