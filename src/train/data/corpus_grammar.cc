// Sentence templates of the generated corpus. Each template is a small fact
// pattern whose later words are predictable from earlier ones (sums,
// successors, who holds how many apples), which is what lets a tiny model
// learn far below the unigram entropy of the text.
#include "train/data/corpus_grammar.h"

#include <array>
#include <string_view>

namespace zerotrain::train::corpus_detail {
namespace {

template <typename T, size_t N>
const T& pick(SplitMix64& rng, const std::array<T, N>& items) {
  return items[rng.below(N)];
}
int uniform(SplitMix64& rng, int lo, int hi) {  // inclusive
  return lo + static_cast<int>(rng.below(static_cast<uint64_t>(hi - lo + 1)));
}

constexpr std::array<std::string_view, 20> kSmall = {
    "zero",     "one",     "two",     "three",     "four",     "five",    "six",
    "seven",    "eight",   "nine",    "ten",       "eleven",   "twelve",  "thirteen",
    "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
constexpr std::array<std::string_view, 10> kTens = {
    "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"};

struct Person {
  std::string_view name, pronoun;
};
constexpr std::array<Person, 10> kPeople = {{{"alice", "she"},
                                             {"bob", "he"},
                                             {"carol", "she"},
                                             {"dave", "he"},
                                             {"emma", "she"},
                                             {"frank", "he"},
                                             {"grace", "she"},
                                             {"henry", "he"},
                                             {"ivy", "she"},
                                             {"jack", "he"}}};
struct Noun {
  std::string_view one, many;
};
constexpr std::array<Noun, 6> kFruit = {{{"apple", "apples"},
                                         {"pear", "pears"},
                                         {"peach", "peaches"},
                                         {"cherry", "cherries"},
                                         {"plum", "plums"},
                                         {"lemon", "lemons"}}};
constexpr std::array<std::string_view, 8> kAdjectives = {"small", "big", "red",   "quiet",
                                                         "happy", "old", "green", "fast"};
constexpr std::array<std::string_view, 8> kAnimals = {"cat", "dog",  "bird",  "fox",
                                                      "cow", "frog", "horse", "mouse"};
constexpr std::array<std::string_view, 6> kVerbs = {"sees",  "chases",  "likes",
                                                    "finds", "carries", "watches"};
constexpr std::array<std::string_view, 8> kThings = {"ball", "box",  "hat",   "stone",
                                                     "cup",  "book", "stick", "rope"};
constexpr std::array<std::string_view, 10> kFacts = {"the sky is blue.",
                                                     "grass is green.",
                                                     "snow is white.",
                                                     "fire is hot.",
                                                     "ice is cold.",
                                                     "the sun rises in the east.",
                                                     "the moon shines at night.",
                                                     "fish swim in the water.",
                                                     "birds fly in the sky.",
                                                     "a week has seven days."};
constexpr std::array<std::string_view, 7> kDays = {"monday", "tuesday",  "wednesday", "thursday",
                                                   "friday", "saturday", "sunday"};
constexpr std::array<std::string_view, 12> kMonths = {
    "january", "february", "march",     "april",   "may",      "june",
    "july",    "august",   "september", "october", "november", "december"};

void arithmetic(SplitMix64& rng, std::string* out) {
  const int kind = uniform(rng, 0, 2);
  int a, b, r;
  std::string_view op;
  if (kind == 0) {
    a = uniform(rng, 0, 12), b = uniform(rng, 0, 12), r = a + b, op = " plus ";
  } else if (kind == 1) {
    a = uniform(rng, 0, 20), b = uniform(rng, 0, a), r = a - b, op = " minus ";
  } else {
    a = uniform(rng, 0, 9), b = uniform(rng, 0, 9), r = a * b, op = " times ";
  }
  if (rng.below(3) == 0) {
    *out += "question: what is " + number_words(a) + std::string(op) + number_words(b) +
            "? answer: " + number_words(r) + ".";
  } else {
    *out += number_words(a) + std::string(op) + number_words(b) + " is " + number_words(r) + ".";
  }
}

void counting(SplitMix64& rng, std::string* out) {
  const int start = uniform(rng, 1, 40), len = uniform(rng, 3, 6);
  *out += "count with me: ";
  for (int i = 0; i < len; ++i) *out += number_words(start + i) + (i + 1 < len ? ", " : ".");
}

void story(SplitMix64& rng, std::string* out) {
  const Person& p = pick(rng, kPeople);
  const Person* q = &pick(rng, kPeople);
  while (q->name == p.name) q = &pick(rng, kPeople);
  const Noun& f = pick(rng, kFruit);
  const int n = uniform(rng, 2, 9), k = uniform(rng, 1, n - 1), left = n - k;
  *out += std::string(p.name) + " has " + number_words(n) + " " + std::string(f.many) + ". " +
          std::string(p.pronoun) + " gives " + number_words(k) + " to " + std::string(q->name) +
          ", so " + std::string(p.name) + " has " + number_words(left) + " " +
          std::string(left == 1 ? f.one : f.many) + " left.";
}

void scene(SplitMix64& rng, std::string* out) {
  *out += "the " + std::string(pick(rng, kAdjectives)) + " " + std::string(pick(rng, kAnimals)) +
          " " + std::string(pick(rng, kVerbs)) + " the " + std::string(pick(rng, kAdjectives)) +
          " " + std::string(pick(rng, kThings)) + ".";
}

void compare(SplitMix64& rng, std::string* out) {
  const int a = uniform(rng, 0, 30);
  int b = uniform(rng, 0, 30);
  if (b == a) b = (a + 1) % 31;
  *out += number_words(a) + " is " + (a > b ? "more" : "less") + " than " + number_words(b) + ".";
}

void calendar(SplitMix64& rng, std::string* out) {
  if (rng.below(2) == 0) {
    const size_t d = rng.below(kDays.size());
    *out += "after " + std::string(kDays[d]) + " comes " +
            std::string(kDays[(d + 1) % kDays.size()]) + ".";
  } else {
    const size_t m = rng.below(kMonths.size());
    *out += "after " + std::string(kMonths[m]) + " comes " +
            std::string(kMonths[(m + 1) % kMonths.size()]) + ".";
  }
}

}  // namespace

std::string number_words(int n) {
  if (n < 20) return std::string(kSmall[n]);
  if (n < 100) {
    std::string s(kTens[n / 10]);
    if (n % 10 != 0) s.append(" ").append(kSmall[n % 10]);
    return s;
  }
  std::string s = std::string(kSmall[n / 100]) + " hundred";
  if (n % 100 != 0) s += " and " + number_words(n % 100);
  return s;
}

void append_sentence(SplitMix64& rng, std::string* out) {
  // Weights: arithmetic 4, story 2, scene 2, counting 1, compare 1, calendar 1, fact 1.
  const uint64_t r = rng.below(12);
  if (r < 4) return arithmetic(rng, out);
  if (r < 6) return story(rng, out);
  if (r < 8) return scene(rng, out);
  if (r < 9) return counting(rng, out);
  if (r < 10) return compare(rng, out);
  if (r < 11) return calendar(rng, out);
  *out += pick(rng, kFacts);
}

}  // namespace zerotrain::train::corpus_detail
