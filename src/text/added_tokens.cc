#include "text/added_tokens.h"

#include <algorithm>
#include <cctype>

namespace zerotrain::text {

namespace {

bool is_word_byte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x80 || std::isalnum(u) != 0 || c == '_';
}
bool is_blank(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

}  // namespace

void AddedTokens::add(AddedToken token) {
  if (token.content.empty()) return;
  for (AddedToken& t : tokens_) {
    if (t.content == token.content) {
      t = std::move(token);
      return;
    }
  }
  tokens_.push_back(std::move(token));
  for (auto& list : by_first_byte_) list.clear();
  for (uint32_t i = 0; i < tokens_.size(); ++i) {
    by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
  }
  for (auto& list : by_first_byte_) {
    std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
  }
}

std::vector<AddedTokens::Segment> AddedTokens::split(std::string_view text) const {
  std::vector<Segment> out;
  size_t text_begin = 0;  // start of the pending plain text
  for (size_t i = 0; i < text.size();) {
    const AddedToken* hit = nullptr;
    for (uint32_t k : by_first_byte_[static_cast<unsigned char>(text[i])]) {
      const AddedToken& t = tokens_[k];
      if (text.compare(i, t.content.size(), t.content) != 0) continue;
      const size_t end = i + t.content.size();
      if (t.single_word && ((i > 0 && is_word_byte(text[i - 1])) ||
                            (end < text.size() && is_word_byte(text[end])))) {
        continue;
      }
      hit = &t;
      break;
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    size_t plain_end = i;
    if (hit->lstrip) {
      while (plain_end > text_begin && is_blank(text[plain_end - 1])) --plain_end;
    }
    if (plain_end > text_begin) {
      out.push_back({text.substr(text_begin, plain_end - text_begin), std::nullopt, text_begin});
    }
    out.push_back({{}, hit->id, plain_end});
    i += hit->content.size();
    if (hit->rstrip) {
      while (i < text.size() && is_blank(text[i])) ++i;
    }
    text_begin = i;
  }
  if (text_begin < text.size()) {
    out.push_back({text.substr(text_begin), std::nullopt, text_begin});
  }
  return out;
}

const AddedToken* AddedTokens::find_id(uint32_t id) const {
  for (const AddedToken& t : tokens_) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

const AddedToken* AddedTokens::find_content(std::string_view content) const {
  for (const AddedToken& t : tokens_) {
    if (t.content == content) return &t;
  }
  return nullptr;
}

}  // namespace zerotrain::text
