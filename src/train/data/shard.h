// Token shard files: a 64-byte little-endian header (magic "ZTTOKENS",
// format version, token width 2 or 4, vocab size, token count, CRC-32 of the
// payload and of the header) followed by the tokens, and in version 2 by a
// loss mask (one bit a token: is it trained as a target) and the block size
// examples were padded to. The layout is specified in docs/data_format.md.
//
//   ZT_RETURN_IF_ERROR(write_token_shard("out/train_000000.bin", tokens, 256));
//   ZT_ASSIGN_OR_RETURN(TokenShard shard, TokenShard::open("out/train_000000.bin"));
//   int32_t first = shard.token(0);
//
// Writes are atomic (temp file in the same directory, fsync, rename, fsync of
// the directory): a reader sees the old file or the whole new one. Opening
// validates everything before returning, so an open shard is always sound.
//
// Thread-safety: write_token_shard is safe to call concurrently for different
// paths. A TokenShard is immutable after open; concurrent reads are safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"

namespace zerotrain::train {

inline constexpr char kShardMagic[8] = {'Z', 'T', 'T', 'O', 'K', 'E', 'N', 'S'};
inline constexpr uint32_t kShardVersion = 2;  // 1 still reads (no mask)
inline constexpr uint32_t kShardHeaderBytes = 64;

struct ShardHeader {
  uint32_t version = kShardVersion;
  uint32_t token_bytes = 2;  // 2 (uint16) or 4 (uint32)
  uint32_t vocab_size = 0;   // every token is < vocab_size
  uint64_t token_count = 0;
  uint32_t payload_crc32 = 0;  // CRC-32 of the payload (tokens, then the mask's bytes)
  bool has_loss_mask = false;  // version 2: a bit per token follows the tokens
  bool has_doc_starts = false;  // version 2: a bit per token (document begins) follows those
  uint32_t block_tokens =
      0;  // version 2: examples padded to blocks of this many tokens (0: packed)
};

// What write_token_shard writes beside the tokens. An empty `trained` and
// block_tokens 0 write version 1 (what older readers read).
struct ShardExtras {
  std::span<const uint8_t> trained;  // [tokens] 1: the token is a trained target, 0: ignored
  std::span<const uint8_t> doc_starts;  // [tokens] 1: a packed document begins at the token
  uint32_t block_tokens = 0;
};

// Writes `tokens` as a shard at `path`, atomically. token_bytes is 2, 4, or
// 0 for "the smallest that holds vocab_size" (2 up to 65536). InvalidArgument
// when a token is >= vocab_size (names its index) or the width cannot hold
// the vocabulary; IoError naming the path when the OS refuses.
// InvalidArgument too when `trained` or `doc_starts` is non-empty and not
// one entry a token.
Status write_token_shard(const std::string& path, std::span<const uint32_t> tokens,
                         uint32_t vocab_size, uint32_t token_bytes = 0,
                         const ShardExtras& extras = {});

// A validated, memory-mapped shard. Move-only.
class TokenShard {
 public:
  // Maps and validates `path`: NotFound if missing; InvalidArgument for a
  // wrong magic (not a shard) or an unsupported version; Corruption for a
  // truncated file, trailing bytes, a checksum mismatch or a token outside
  // the vocabulary. Every message starts with the path.
  static StatusOr<TokenShard> open(const std::string& path);

  TokenShard(TokenShard&& other) noexcept;
  TokenShard& operator=(TokenShard&& other) noexcept;
  TokenShard(const TokenShard&) = delete;
  TokenShard& operator=(const TokenShard&) = delete;
  ~TokenShard();

  const ShardHeader& header() const { return header_; }
  const std::string& path() const { return path_; }
  uint64_t size() const { return header_.token_count; }
  uint32_t token(uint64_t index) const;
  // out[i] = token(begin + i) for i < count. REQUIRES: begin + count <= size().
  void copy(uint64_t begin, uint64_t count, int32_t* out) const;
  // out[i] = 1 when token begin + i is a trained target (always, without a
  // loss mask), else 0. REQUIRES: begin + count <= size().
  void copy_trained(uint64_t begin, uint64_t count, uint8_t* out) const;
  // out[i] = 1 when a packed document begins at token begin + i (0 without
  // document starts).
  void copy_doc_starts(uint64_t begin, uint64_t count, uint8_t* out) const;

 private:
  TokenShard() = default;
  void unmap();

  std::string path_;
  ShardHeader header_;
  void* map_ = nullptr;  // whole file, PROT_READ
  size_t map_bytes_ = 0;
  const unsigned char* payload_ = nullptr;
  const unsigned char* mask_ = nullptr;    // after the tokens, version 2 with a mask
  const unsigned char* starts_ = nullptr;  // after the mask (or the tokens)
};

}  // namespace zerotrain::train
