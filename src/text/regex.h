// A compiled Unicode regular expression (PCRE2, UTF + UCP, JIT when the
// platform has it): the pre-tokenizers' Split patterns and GPT-2's
// ByteLevel pattern. \p{L}, \p{N} and \s mean the Unicode classes, as they
// do in Oniguruma (HF tokenizers) and in JavaScript's /u.
//
//   ZT_ASSIGN_OR_RETURN(Regex re, Regex::compile(R"( ?\p{L}+|\s+)"));
//   re.for_each_match(text, [&](size_t begin, size_t end) { ... });
//
// Thread-safety: a compiled Regex is immutable; for_each_match allocates
// its own match data, so concurrent calls are safe.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace zerotrain::text {

class Regex {
 public:
  // InvalidArgument naming the pattern and PCRE2's message and offset.
  static StatusOr<Regex> compile(const std::string& pattern);

  // Calls fn(begin, end) for every non-overlapping match left to right (an
  // empty match advances by one code point). Returns the first PCRE2 error
  // (e.g. the match limit) as Internal.
  Status for_each_match(std::string_view subject,
                        const std::function<void(size_t, size_t)>& fn) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  std::shared_ptr<const Code> code_;
  std::string pattern_;
};

}  // namespace zerotrain::text
