#include "text/bpe.h"

#include <cstdio>
#include <queue>

#include "text/json_fields.h"
#include "text/utf8.h"

namespace zerotrain::text {

using json_fields::Json;

namespace {

constexpr size_t kCacheEntries = 1 << 20;
constexpr size_t kCachedWordBytes = 64;

const std::string& empty_token() {
  static const std::string e;
  return e;
}

}  // namespace

Status BpeModel::set_vocab(const Json& vocab, const std::string& where) {
  if (!vocab.is_object()) return json_fields::wrong_type(where, "an object of token -> id");
  vocab_.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0) {
      return json_fields::wrong_type(where + "[\"" + token + "\"]", "a non-negative integer id");
    }
    const auto i = id.get<uint64_t>();
    if (i >= (uint64_t{1} << 31))
      return invalid_argument(where + ": id " + std::to_string(i) + " too large");
    if (i >= tokens_.size()) tokens_.resize(i + 1);
    if (!tokens_[i].empty()) {
      return invalid_argument(where + ": id " + std::to_string(i) + " is given to both \"" +
                              tokens_[i] + "\" and \"" + token + "\"");
    }
    tokens_[i] = token;
    vocab_.emplace(token, static_cast<uint32_t>(i));
  }
  return ok_status();
}

Status BpeModel::add_merge(const std::string& a, const std::string& b, const std::string& where) {
  const auto ia = vocab_.find(a), ib = vocab_.find(b), iab = vocab_.find(a + b);
  if (ia == vocab_.end() || ib == vocab_.end() || iab == vocab_.end()) {
    const std::string& missing = ia == vocab_.end() ? a : ib == vocab_.end() ? b : a + b;
    return invalid_argument(where + ": merge \"" + a + " " + b + "\" uses \"" + missing +
                            "\", which is not in the vocabulary");
  }
  const auto rank = static_cast<uint32_t>(merges_.size());
  merges_.emplace(pair_key(ia->second, ib->second), std::make_pair(rank, iab->second));
  return ok_status();
}

Status BpeModel::finish(const std::string& where) {
  for (int b = 0; b < 256; ++b) {
    const auto bl = vocab_.find(byte_level_char(static_cast<uint8_t>(b)));
    byte_level_ids_[b] = bl == vocab_.end() ? -1 : bl->second;
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    const auto fb = vocab_.find(name);
    fallback_ids_[b] = fb == vocab_.end() ? -1 : fb->second;
  }
  if (byte_fallback_) {
    for (int b = 0; b < 256; ++b) {
      if (fallback_ids_[b] < 0) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", b);
        return invalid_argument(where + ": byte_fallback is on but the vocabulary has no \"" +
                                name + "\"");
      }
    }
  }
  return ok_status();
}

StatusOr<BpeModel> BpeModel::from_json(const Json& j, const std::string& where) {
  ZT_ASSIGN_OR_RETURN(std::string type, json_fields::type_of(j, where));
  if (type != "BPE") return json_fields::unsupported(where, type, "BPE");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (j.contains(key) && !j[key].is_null() && j[key] != "") {
      return invalid_argument(where + "." + key + " is not supported");
    }
  }
  if (j.contains("dropout") && j["dropout"].is_number() && j["dropout"].get<double>() > 0) {
    return invalid_argument(where +
                            ".dropout: BPE dropout is not supported (it is for training "
                            "a tokenizer, not for encoding data)");
  }
  BpeModel m;
  if (!j.contains("vocab")) return json_fields::wrong_type(where + ".vocab", "an object");
  ZT_RETURN_IF_ERROR(m.set_vocab(j["vocab"], where + ".vocab"));
  ZT_ASSIGN_OR_RETURN(m.byte_fallback_, json_fields::bool_or(j, "byte_fallback", false, where));
  ZT_ASSIGN_OR_RETURN(m.fuse_unk_, json_fields::bool_or(j, "fuse_unk", false, where));
  ZT_ASSIGN_OR_RETURN(m.ignore_merges_, json_fields::bool_or(j, "ignore_merges", false, where));
  if (j.contains("unk_token") && j["unk_token"].is_string()) {
    const auto it = m.vocab_.find(j["unk_token"].get<std::string>());
    if (it == m.vocab_.end()) {
      return invalid_argument(where + ".unk_token \"" + j["unk_token"].get<std::string>() +
                              "\" is not in the vocabulary");
    }
    m.unk_ = it->second;
  }
  const auto merges = j.find("merges");
  if (merges == j.end() || !merges->is_array()) {
    return json_fields::wrong_type(where + ".merges", "an array");
  }
  m.merges_.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const Json& e = (*merges)[i];
    const std::string at = where + ".merges[" + std::to_string(i) + "]";
    if (e.is_string()) {  // "a b" (tokenizers < 0.20)
      const std::string s = e.get<std::string>();
      const size_t space = s.find(' ', 1);
      if (space == std::string::npos)
        return invalid_argument(at + ": \"" + s + "\" is not \"a b\"");
      ZT_RETURN_IF_ERROR(m.add_merge(s.substr(0, space), s.substr(space + 1), at));
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      ZT_RETURN_IF_ERROR(m.add_merge(e[0].get<std::string>(), e[1].get<std::string>(), at));
    } else {
      return json_fields::wrong_type(at, "\"a b\" or [\"a\", \"b\"]");
    }
  }
  ZT_RETURN_IF_ERROR(m.finish(where));
  return m;
}

StatusOr<BpeModel> BpeModel::from_vocab_and_merges(const Json& vocab,
                                                   const std::string& merges_text,
                                                   const std::string& where) {
  BpeModel m;
  ZT_RETURN_IF_ERROR(m.set_vocab(vocab, where + " vocabulary"));
  size_t line_no = 0;
  for (size_t pos = 0; pos < merges_text.size();) {
    size_t end = merges_text.find('\n', pos);
    if (end == std::string::npos) end = merges_text.size();
    std::string line = merges_text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    const size_t space = line.find(' ');
    if (space == std::string::npos || space == 0) {
      return invalid_argument(where + " merges line " + std::to_string(line_no) + ": \"" + line +
                              "\" is not \"a b\"");
    }
    ZT_RETURN_IF_ERROR(m.add_merge(line.substr(0, space), line.substr(space + 1),
                                   where + " merges line " + std::to_string(line_no)));
  }
  ZT_RETURN_IF_ERROR(m.finish(where));
  return m;
}

std::optional<uint32_t> BpeModel::token_to_id(std::string_view token) const {
  const auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string& BpeModel::id_to_token(uint32_t id) const {
  return id < tokens_.size() ? tokens_[id] : empty_token();
}

void BpeModel::initial_symbols(std::string_view word, bool byte_level,
                               std::vector<uint32_t>& out) const {
  if (byte_level) {
    for (char c : word) {
      const int64_t id = byte_level_ids_[static_cast<uint8_t>(c)];
      if (id >= 0) {
        out.push_back(static_cast<uint32_t>(id));
      } else if (unk_) {
        out.push_back(*unk_);
      }
    }
    return;
  }
  bool previous_unk = false;
  for (size_t i = 0; i < word.size();) {
    size_t n = utf8_sequence_length(word, i);
    if (n == 0) n = 1;
    const auto it = vocab_.find(std::string(word.substr(i, n)));
    if (it != vocab_.end()) {
      out.push_back(it->second);
      previous_unk = false;
    } else if (byte_fallback_) {
      for (size_t k = 0; k < n; ++k) {
        out.push_back(static_cast<uint32_t>(fallback_ids_[static_cast<uint8_t>(word[i + k])]));
      }
      previous_unk = false;
    } else if (unk_) {
      if (!(fuse_unk_ && previous_unk)) out.push_back(*unk_);
      previous_unk = true;
    }
    i += n;
  }
}

void BpeModel::merge(std::vector<uint32_t>& sym) const {
  const size_t n = sym.size();
  if (n < 2) return;
  // Symbols as a linked list; a min-heap of (rank, position) candidate pairs.
  std::vector<int64_t> next(n), prev(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? static_cast<int64_t>(i + 1) : -1;
    prev[i] = static_cast<int64_t>(i) - 1;
  }
  using Candidate = std::pair<uint32_t, uint32_t>;  // rank, left position
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  const auto consider = [&](int64_t left) {
    if (left < 0 || next[left] < 0) return;
    const auto it = merges_.find(pair_key(sym[left], sym[next[left]]));
    if (it != merges_.end()) heap.emplace(it->second.first, static_cast<uint32_t>(left));
  };
  for (size_t i = 0; i + 1 < n; ++i) consider(static_cast<int64_t>(i));
  while (!heap.empty()) {
    const auto [rank, left] = heap.top();
    heap.pop();
    if (!alive[left] || next[left] < 0) continue;
    const int64_t right = next[left];
    const auto it = merges_.find(pair_key(sym[left], sym[right]));
    if (it == merges_.end() || it->second.first != rank) continue;  // stale candidate
    sym[left] = it->second.second;
    alive[right] = false;
    next[left] = next[right];
    if (next[right] >= 0) prev[next[right]] = left;
    consider(prev[left]);
    consider(left);
  }
  size_t w = 0;
  for (size_t i = 0; i < n; ++i) {
    if (alive[i]) sym[w++] = sym[i];
  }
  sym.resize(w);
}

void BpeModel::encode_word(std::string_view word, bool byte_level, std::vector<uint32_t>& out) {
  const bool cacheable = word.size() <= kCachedWordBytes;
  if (cacheable) {
    const auto hit = cache_.find(std::string(word));
    if (hit != cache_.end()) {
      out.insert(out.end(), hit->second.begin(), hit->second.end());
      return;
    }
  }
  std::vector<uint32_t> symbols;
  bool whole = false;
  if (ignore_merges_) {
    const auto it = vocab_.find(byte_level ? to_byte_level(word) : std::string(word));
    if (it != vocab_.end()) {
      symbols.push_back(it->second);
      whole = true;
    }
  }
  if (!whole) {
    initial_symbols(word, byte_level, symbols);
    merge(symbols);
  }
  out.insert(out.end(), symbols.begin(), symbols.end());
  if (cacheable) {
    if (cache_.size() >= kCacheEntries) cache_.clear();
    cache_.emplace(std::string(word), std::move(symbols));
  }
}

}  // namespace zerotrain::text
