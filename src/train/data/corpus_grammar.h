// Internal: the sentence templates of the generated corpus (corpus.h).
//
//   SplitMix64 rng(7);
//   std::string s;
//   append_sentence(rng, &s);  // e.g. "seven plus five is twelve."
//
// Thread-safety: pure functions of the generator passed in.
#pragma once

#include <string>

#include "train/data/rng.h"

namespace zerotrain::train::corpus_detail {

// English words for 0 <= n <= 999 ("forty two", "one hundred and seven").
std::string number_words(int n);
// Appends one lower-case sentence ending in '.' (no leading space).
void append_sentence(SplitMix64& rng, std::string* out);

}  // namespace zerotrain::train::corpus_detail
