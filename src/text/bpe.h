// The BPE model of HF tokenizers (tokenizer.json "model" of type BPE): a
// vocabulary, ranked merges, and how one pre-tokenized word becomes ids.
// Merges apply lowest rank first, leftmost first among equal ranks (HF's
// rule; the same as GPT-2's merge-all-occurrences loop). Byte-level words
// start from one symbol per byte; other words from one symbol per
// character, with byte fallback (<0xXX>) or the unknown token for
// characters outside the vocabulary. ignore_merges (Llama 3) takes a word
// that is itself in the vocabulary whole.
//
//   ZT_ASSIGN_OR_RETURN(BpeModel bpe, BpeModel::from_json(j["model"], "model"));
//   std::vector<uint32_t> ids;
//   bpe.encode_word("Ġhello", /*byte_level=*/false, ids);
//
// Thread-safety: encode_word fills a word cache and is not safe to call
// concurrently; everything else is const.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"

namespace zerotrain::text {

class BpeModel {
 public:
  // Refuses dropout, continuing_subword_prefix and end_of_word_suffix (not
  // used by the supported families), a merge of tokens outside the
  // vocabulary, or a merge whose result is not in it.
  static StatusOr<BpeModel> from_json(const nlohmann::json& j, const std::string& where);
  // GPT-2's files: vocab.json / encoder.json (token -> id) and the merges
  // ("a b" per line, after a "#version" header line).
  static StatusOr<BpeModel> from_vocab_and_merges(const nlohmann::json& vocab,
                                                  const std::string& merges_text,
                                                  const std::string& where);

  // Appends the ids of one word. byte_level: `word` is raw bytes and its
  // symbols are the byte-level characters of those bytes.
  void encode_word(std::string_view word, bool byte_level, std::vector<uint32_t>& out);

  std::optional<uint32_t> token_to_id(std::string_view token) const;
  // "" for an id the model does not have.
  const std::string& id_to_token(uint32_t id) const;
  // One more than the largest id.
  uint32_t size() const { return static_cast<uint32_t>(tokens_.size()); }
  bool byte_fallback() const { return byte_fallback_; }

 private:
  using Merges = std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>>;  // pair -> rank, id
  static uint64_t pair_key(uint32_t a, uint32_t b) { return (uint64_t{a} << 32) | b; }
  Status set_vocab(const nlohmann::json& vocab, const std::string& where);
  Status add_merge(const std::string& a, const std::string& b, const std::string& where);
  Status finish(const std::string& where);
  void initial_symbols(std::string_view word, bool byte_level, std::vector<uint32_t>& out) const;
  void merge(std::vector<uint32_t>& symbols) const;

  std::unordered_map<std::string, uint32_t> vocab_;
  std::vector<std::string> tokens_;
  Merges merges_;
  std::array<int64_t, 256> byte_level_ids_{};  // id of each byte's byte-level char, or -1
  std::array<int64_t, 256> fallback_ids_{};    // id of "<0xXX>", or -1
  std::optional<uint32_t> unk_;
  bool byte_fallback_ = false, fuse_unk_ = false, ignore_merges_ = false;
  std::unordered_map<std::string, std::vector<uint32_t>> cache_;
};

}  // namespace zerotrain::text
