// Unknown-key suggestions (see suggest.h).
#include "config/suggest.h"

#include <algorithm>
#include <cctype>

#include "config/schema.h"

namespace zerotrain::config {
namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// Typos of long names drift further: allow ~1 edit per 4 characters, 1..3.
size_t threshold(std::string_view word) { return std::clamp<size_t>(word.size() / 4, 1, 3); }

// The '_'-separated words of a key, lower-cased and sorted: "comm_overlap"
// and "overlap_comm" have the same bag.
std::vector<std::string> word_bag(std::string_view key) {
  std::vector<std::string> words(1);
  for (char c : key) {
    if (c == '_') {
      if (!words.back().empty()) words.emplace_back();
    } else {
      words.back() += lower(c);
    }
  }
  if (words.back().empty()) words.pop_back();
  std::sort(words.begin(), words.end());
  return words;
}

std::string where(std::string_view section) {
  return section.empty() ? "at the top level" : "under " + std::string(section);
}

}  // namespace

size_t edit_distance(std::string_view a, std::string_view b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates) {
  // Swapped words first: edit distance would rank "comm_overlap" closer to
  // nothing useful, and the same words in another order are rarely a new key.
  const std::vector<std::string> bag = word_bag(word);
  if (bag.size() > 1)
    for (const std::string& c : candidates)
      if (c != word && word_bag(c) == bag) return c;
  std::optional<std::string> best;
  size_t best_distance = threshold(word) + 1;
  for (const std::string& c : candidates) {
    size_t dist = edit_distance(word, c);
    if (dist < best_distance) {
      best_distance = dist;
      best = c;
    }
  }
  return best;
}

std::optional<std::string> known_key_hint(std::string_view section, std::string_view key) {
  std::vector<std::string> here;
  for (const KeySpec* k : children_of(section)) here.emplace_back(leaf_name(k->path));
  if (auto m = closest_match(key, here)) return "did you mean '" + *m + "'?";

  // The key (or a near spelling) declared elsewhere: say where it belongs.
  std::vector<std::string> exact, leaves, paths;
  for (const KeySpec& k : schema()) {
    if (parent_path(k.path) == section) continue;
    if (leaf_name(k.path) == key) exact.emplace_back(parent_path(k.path));
    leaves.emplace_back(leaf_name(k.path));
    paths.emplace_back(k.path);
  }
  if (!exact.empty()) {
    std::string hint = "'";
    hint.append(key).append("' belongs ").append(where(exact.front()));
    return hint;
  }
  if (auto m = closest_match(key, leaves)) {
    size_t i = static_cast<size_t>(std::find(leaves.begin(), leaves.end(), *m) - leaves.begin());
    return "did you mean '" + paths[i] + "'?";
  }
  return std::nullopt;
}

std::string unknown_key_message(std::string_view section, std::string_view key) {
  std::string msg = "unknown key '" + std::string(key) + "' " + where(section);
  if (auto hint = known_key_hint(section, key)) return msg + "; " + *hint;
  std::vector<std::string> here;  // ignored-with-a-warning keys are not "valid"
  for (const KeySpec* k : children_of(section))
    if (k->warn.empty()) here.emplace_back(leaf_name(k->path));
  if (here.size() <= 16) {
    msg += " (valid keys: ";
    for (size_t i = 0; i < here.size(); ++i) msg += (i ? ", " : "") + here[i];
    msg += ")";
  } else {
    msg += " (see docs/config.md for the valid keys)";
  }
  return msg;
}

}  // namespace zerotrain::config
