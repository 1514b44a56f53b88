// Byte-level tokenizer (each byte is one token, ids 0..255; optionally id 256
// marks end-of-text between documents) and the `zerotrain data tokenize`
// entry point that turns a text file into train/val token shards.
//
//   ByteTokenizer tok;                                   // vocab 256
//   std::vector<uint32_t> ids = tok.encode("hi\n");      // {104, 105, 10}
//   ZT_ASSIGN_OR_RETURN(std::string text, tok.decode(ids));
//   ZT_RETURN_IF_ERROR(tokenize_text_file("in.txt", "data", 1 << 20, 0.1));
//
// Thread-safety: ByteTokenizer is immutable; the functions share no state
// (two calls must not write the same output directory).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace zerotrain::train {

inline constexpr uint32_t kByteVocabSize = 256;
inline constexpr uint32_t kEndOfTextToken = 256;  // only with end_of_text
// Defaults for `zerotrain data tokenize`: 10 M tokens (20 MB) a shard, 10% val.
inline constexpr uint64_t kDefaultShardTokens = 10'000'000;
inline constexpr double kDefaultValFraction = 0.1;

class ByteTokenizer {
 public:
  // With end_of_text the vocabulary is 257 and id 256 separates documents.
  explicit ByteTokenizer(bool end_of_text = false) : end_of_text_(end_of_text) {}

  uint32_t vocab_size() const { return end_of_text_ ? kByteVocabSize + 1 : kByteVocabSize; }
  bool has_end_of_text() const { return end_of_text_; }

  // One token per byte, byte value as id (0x00 and 0xFF included).
  std::vector<uint32_t> encode(std::string_view text) const;
  // Appends text's tokens, then end-of-text if enabled.
  void encode_document(std::string_view text, std::vector<uint32_t>* out) const;
  // Inverse of encode; end-of-text ids are dropped. InvalidArgument naming
  // the index for an id outside the vocabulary.
  StatusOr<std::string> decode(std::span<const uint32_t> tokens) const;

 private:
  bool end_of_text_;
};

// Tokens held out for validation: floor(token_count * val_fraction), taken
// from the END of the sequence.
uint64_t val_token_count(uint64_t token_count, double val_fraction);

struct TokenizeSummary {
  uint64_t train_tokens = 0;
  uint64_t val_tokens = 0;
  std::vector<std::string> files;  // written shard paths, train first
  // With a tokenizer (`data tokenize --tokenizer`):
  uint64_t examples = 0;        // documents or JSON Lines records
  uint64_t trained_tokens = 0;  // train-split tokens that are targets (masked data)
  uint64_t truncated = 0;       // examples cut to the block size
  std::string layout;           // "stream", "packed, loss-masked (chatml)", ...
};

// Splits `tokens` into train (first part) and val (last val_token_count)
// and writes <output_dir>/train_%06d.bin and val_%06d.bin with at most
// shard_tokens tokens each (no val file when there are no val tokens).
// Creates output_dir. InvalidArgument when shard_tokens == 0, val_fraction is
// outside [0, 1), there are no train tokens, or output_dir already holds
// train_*.bin / val_*.bin shards (stale shards would join the dataset).
Status write_token_splits(std::span<const uint32_t> tokens, uint32_t vocab_size,
                          const std::string& output_dir, uint64_t shard_tokens, double val_fraction,
                          TokenizeSummary* summary = nullptr);

// A split's tokens and, when the data has a loss mask, one 0/1 a token
// (1: trained as a target).
struct SplitTokens {
  std::vector<uint32_t> tokens;
  std::vector<uint8_t> trained;
  std::vector<uint8_t> doc_starts;  // packed documents: 1 where one begins (else empty)
};

// Writes `train` and `val` (which may be empty) as shards of at most
// shard_tokens tokens, with their loss masks and block size (0: packed), as
// write_token_splits does otherwise.
Status write_split_tokens(const SplitTokens& train, const SplitTokens& val, uint32_t vocab_size,
                          const std::string& output_dir, uint64_t shard_tokens,
                          uint32_t block_tokens, TokenizeSummary* summary);

// Reads input_path (any bytes), byte-tokenizes it (vocab 256) and writes the
// splits as write_token_splits does, streaming: one shard in memory at a
// time. NotFound/IoError naming input_path; InvalidArgument when it is empty
// or the arguments are bad (as write_token_splits).
Status tokenize_text_file(const std::string& input_path, const std::string& output_dir,
                          uint64_t shard_tokens, double val_fraction,
                          TokenizeSummary* summary = nullptr);

}  // namespace zerotrain::train
