// A Hugging Face tokenizer: reads tokenizer.json (or GPT-2's vocab.json /
// encoder.json + merges.txt / vocab.bpe pair) and encodes and decodes
// exactly as HF tokenizers does for the BPE families: byte-level BPE
// (GPT-2, Llama 3, Qwen2) and SentencePiece-style BPE with byte fallback
// (Llama 2, Mistral, TinyLlama). The pipeline is HF's: added tokens cut out
// first, then per stretch of text the normalizer, the pre-tokenizer and BPE;
// special tokens of the post-processor's template when asked for.
//
//   ZT_ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::load("models/llama3"));
//   ZT_ASSIGN_OR_RETURN(std::vector<uint32_t> ids, tok.encode("Hello world"));
//   std::string text = tok.decode(ids);  // "Hello world"
//
// Thread-safety: encode fills a word cache and must not run concurrently on
// one Tokenizer (copy it per thread); decode and the lookups are const.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "text/added_tokens.h"
#include "text/bpe.h"
#include "text/decoder.h"
#include "text/normalizer.h"
#include "text/pre_tokenizer.h"

namespace zerotrain::text {

class Tokenizer {
 public:
  // `path`: a tokenizer.json file, or a directory holding tokenizer.json, or
  // one holding vocab.json|encoder.json and merges.txt|vocab.bpe (GPT-2).
  // tokenizer_config.json beside it, when present, names the bos and eos
  // tokens. NotFound when nothing loadable is there; InvalidArgument naming
  // the file and JSON path for anything malformed or unsupported.
  static StatusOr<Tokenizer> load(const std::string& path);
  // From a parsed tokenizer.json (and an optional tokenizer_config.json).
  static StatusOr<Tokenizer> from_json(const nlohmann::json& tokenizer,
                                       const nlohmann::json& config, const std::string& where);

  // InvalidArgument (with the byte offset) when `text` is not UTF-8.
  // add_special_tokens: the post-processor's template (e.g. Llama 2's <s>).
  StatusOr<std::vector<uint32_t>> encode(std::string_view text, bool add_special_tokens = false);
  // Text of `ids`; skip_special drops special added tokens. Ids outside the
  // vocabulary decode to nothing.
  std::string decode(std::span<const uint32_t> ids, bool skip_special = false) const;

  // One more than the largest id (model or added).
  uint32_t vocab_size() const { return vocab_size_; }
  std::optional<uint32_t> token_to_id(std::string_view token) const;
  std::string id_to_token(uint32_t id) const;
  bool is_special(uint32_t id) const;
  std::optional<uint32_t> bos_id() const { return bos_; }
  std::optional<uint32_t> eos_id() const { return eos_; }
  // Where it was loaded from.
  const std::string& source() const { return source_; }

 private:
  Status set_post_processor(const nlohmann::json& j, const std::string& where);
  void set_named_tokens(const nlohmann::json& config);

  Normalizer normalizer_;
  PreTokenizer pre_tokenizer_;
  BpeModel model_;
  Decoder decoder_;
  AddedTokens added_;
  std::vector<uint32_t> prefix_, suffix_;  // the template's special tokens
  std::optional<uint32_t> bos_, eos_;
  uint32_t vocab_size_ = 0;
  std::string source_;
};

}  // namespace zerotrain::text
