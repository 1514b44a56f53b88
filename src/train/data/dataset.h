// TokenDataset: one read-only token sequence made of the concatenation of
// shard files (in the order given) or of an in-memory vector. The loader cuts
// windows from it; a window may span two shards.
//
//   ZT_ASSIGN_OR_RETURN(TokenDataset train, TokenDataset::open_split("data", "train"));
//   std::vector<int32_t> w(65);
//   train.copy(0, 65, w.data());
//
// Thread-safety: immutable after construction; concurrent copy() calls are safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "train/data/shard.h"

namespace zerotrain::train {

class TokenDataset {
 public:
  // Opens and validates each shard (see TokenShard::open). InvalidArgument
  // when the list is empty or two shards disagree on vocab_size (names both).
  static StatusOr<TokenDataset> open(const std::vector<std::string>& paths);
  // Opens `dir`/<split>_*.bin in name order (train_000000.bin, ...).
  // NotFound naming the directory and pattern when there are none.
  static StatusOr<TokenDataset> open_split(const std::string& dir, std::string_view split);
  // An in-memory dataset. REQUIRES: every token < vocab_size <= 2^31 - 1;
  // `trained` empty (every token trained) or one 0/1 a token.
  static TokenDataset from_tokens(std::vector<uint32_t> tokens, uint32_t vocab_size,
                                  std::vector<uint8_t> trained = {}, uint32_t block_tokens = 0,
                                  std::vector<uint8_t> doc_starts = {});

  uint64_t size() const { return size_; }
  uint32_t vocab_size() const { return vocab_size_; }
  // out[i] = token at begin + i, i < count. REQUIRES: begin + count <= size().
  void copy(uint64_t begin, uint64_t count, int32_t* out) const;
  // Some shard carries a loss mask (data tokenize of chat or prompt/completion
  // records): copy_trained then says which tokens are trained targets.
  bool has_loss_mask() const { return has_loss_mask_; }
  void copy_trained(uint64_t begin, uint64_t count, uint8_t* out) const;
  // Packed documents (`data tokenize --pack`): where each begins.
  bool has_doc_starts() const { return has_doc_starts_; }
  void copy_doc_starts(uint64_t begin, uint64_t count, uint8_t* out) const;
  // The block size examples were padded to (0: packed); every shard agrees.
  uint32_t block_tokens() const { return block_tokens_; }

 private:
  TokenDataset() = default;
  // fn(shard, local begin, count, offset into the run) for each shard's
  // part of [begin, begin + count).
  template <typename Fn>
  void for_each_shard_run(uint64_t begin, uint64_t count, Fn&& fn) const;

  std::vector<TokenShard> shards_;
  std::vector<uint64_t> shard_begin_;  // [shards_] global offset of each shard's first token
  std::vector<uint32_t> memory_;       // used when shards_ is empty
  std::vector<uint8_t> memory_trained_;  // with memory_, when it has a mask
  std::vector<uint8_t> memory_starts_;   // with memory_, packed documents
  bool has_loss_mask_ = false, has_doc_starts_ = false;
  uint32_t block_tokens_ = 0;
  uint64_t size_ = 0;
  uint32_t vocab_size_ = 0;
};

}  // namespace zerotrain::train
