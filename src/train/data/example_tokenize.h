// `zerotrain data tokenize --tokenizer PATH`: text through a Hugging Face
// tokenizer into token shards, with a loss mask for instruction data.
//
// Input is plain text (one stream, end-of-text at the end) or JSON Lines,
// one example a line: {"text": ...} (every token trained), {"messages":
// [...]} (chat: only the assistant's replies trained, rendered in the
// tokenizer's chat format, see chat_format.h), or {"prompt", "completion"}
// (only the completion trained). Each example is encoded as one string, as
// HF encodes a rendered chat template, and the mask follows the parts'
// boundaries in its tokens (a token that straddles one counts as the later
// part's). Examples are either packed one after another, or (with seq_len)
// each put at the start of its own block of seq_len tokens, cut to it and
// padded with ignored tokens, so that no example sees another: the shards
// then record the block size and the trainer must use that seq_len.
// Validation takes the last val_fraction of the examples (of the tokens,
// for plain text).
//
//   ExampleTokenizeOptions o{.seq_len = 512};
//   ZT_RETURN_IF_ERROR(tokenize_examples("chat.jsonl", "data", tokenizer, o, &summary));
//
// Thread-safety: uses `tokenizer` (not concurrently safe); otherwise no
// shared state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "text/tokenizer.h"
#include "train/data/chat_format.h"
#include "train/data/tokenizer.h"

namespace zerotrain::train {

struct ExampleTokenizeOptions {
  std::string text_field = "text";
  std::string chat_format = "auto";
  bool pack = false;
  int64_t seq_len = 0;     // block size (0: a stream); masked examples and pack need it
  bool append_eos = true;  // end-of-text after every text example and completion
  uint64_t shard_tokens = kDefaultShardTokens;
  double val_fraction = kDefaultValFraction;
  bool jsonl = false;  // else plain text (the CLI decides by extension or --format)
};

struct EncodedExample {
  std::vector<uint32_t> ids;
  std::vector<uint8_t> trained;  // [ids] 1: trained target
};

// `parts` joined and encoded once; each token trained when its part is.
StatusOr<EncodedExample> encode_parts(text::Tokenizer& tok, const std::vector<TextPart>& parts,
                                      bool add_special_tokens);

// NotFound / IoError naming the input; InvalidArgument naming the line for
// a malformed record, or for bad options (as write_token_splits).
Status tokenize_examples(const std::string& input_path, const std::string& output_dir,
                         text::Tokenizer& tok, const ExampleTokenizeOptions& options,
                         TokenizeSummary* summary);

}  // namespace zerotrain::train
