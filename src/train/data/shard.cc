// Token shard writer (atomic) and reader (mmap + full validation).
#include "train/data/shard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "core/atomic_file.h"
#include "core/crc32.h"

namespace zerotrain::train {
namespace {

// Header field offsets (docs/data_format.md).
constexpr size_t kOffVersion = 8, kOffHeaderBytes = 12, kOffTokenBytes = 16, kOffVocab = 20,
                 kOffCount = 24, kOffPayloadCrc = 32, kOffHeaderCrc = 36, kOffFlags = 40,
                 kOffBlockTokens = 44;
constexpr uint32_t kFlagLossMask = 1, kFlagDocStarts = 2;

// One bit a token, LSB first.
void put_bits(std::span<const uint8_t> bits, unsigned char* out) {
  for (size_t i = 0; i < bits.size(); ++i) {
    if (bits[i] != 0) out[i / 8] |= static_cast<unsigned char>(1u << (i % 8));
  }
}
void get_bits(const unsigned char* bits, uint64_t begin, uint64_t count, uint8_t* out) {
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t k = begin + i;
    out[i] = bits == nullptr ? 0 : static_cast<uint8_t>((bits[k / 8] >> (k % 8)) & 1u);
  }
}
// Ids reach the model as int32_t.
constexpr uint32_t kMaxVocab = 0x7FFFFFFF;

void put_u32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
void put_u64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
uint32_t get_u32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
uint64_t get_u64(const unsigned char* p) {
  return uint64_t{get_u32(p)} | uint64_t{get_u32(p + 4)} << 32;
}

// CRC of the header with its own CRC field read as zero.
uint32_t header_crc(const unsigned char* h) {
  unsigned char copy[kShardHeaderBytes];
  std::memcpy(copy, h, kShardHeaderBytes);
  put_u32(copy + kOffHeaderCrc, 0);
  return crc32(copy, kShardHeaderBytes);
}

void encode_tokens(std::span<const uint32_t> tokens, uint32_t width, unsigned char* out) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    for (uint32_t b = 0; b < width; ++b)
      out[i * width + b] = static_cast<unsigned char>(tokens[i] >> (8 * b));
  }
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

// Checks the fixed header of a file of `file_bytes` bytes at `h`.
StatusOr<ShardHeader> parse_header(const std::string& path, const unsigned char* h,
                                   size_t file_bytes) {
  const std::string where = "token shard " + path + ": ";
  if (file_bytes < sizeof(kShardMagic) || std::memcmp(h, kShardMagic, sizeof(kShardMagic)) != 0) {
    return invalid_argument(where +
                            "not a zerotrain token shard (wrong magic; expected \"ZTTOKENS\")");
  }
  if (file_bytes < kShardHeaderBytes) {
    return corruption(where + "truncated header (" + std::to_string(file_bytes) +
                      " bytes, header is " + std::to_string(kShardHeaderBytes) + ")");
  }
  ShardHeader hd;
  hd.version = get_u32(h + kOffVersion);
  if (hd.version != 1 && hd.version != kShardVersion) {
    return invalid_argument(where + "format version " + std::to_string(hd.version) +
                            ", this build reads versions 1 and " + std::to_string(kShardVersion) +
                            " (re-create it with `zerotrain data tokenize`)");
  }
  const uint32_t stored = get_u32(h + kOffHeaderCrc), computed = header_crc(h);
  if (stored != computed) {
    return corruption(where + "header checksum mismatch (stored " + hex32(stored) + ", computed " +
                      hex32(computed) + ")");
  }
  hd.token_bytes = get_u32(h + kOffTokenBytes);
  hd.vocab_size = get_u32(h + kOffVocab);
  hd.token_count = get_u64(h + kOffCount);
  hd.payload_crc32 = get_u32(h + kOffPayloadCrc);
  const uint32_t flags = hd.version >= 2 ? get_u32(h + kOffFlags) : 0;
  hd.has_loss_mask = (flags & kFlagLossMask) != 0;
  hd.has_doc_starts = (flags & kFlagDocStarts) != 0;
  hd.block_tokens = hd.version >= 2 ? get_u32(h + kOffBlockTokens) : 0;
  if ((flags & ~(kFlagLossMask | kFlagDocStarts)) != 0) {
    return corruption(where + "unknown flags " + hex32(flags) + " in the header");
  }
  const uint32_t header_bytes = get_u32(h + kOffHeaderBytes);
  if (header_bytes != kShardHeaderBytes || (hd.token_bytes != 2 && hd.token_bytes != 4) ||
      hd.vocab_size == 0 || hd.vocab_size > kMaxVocab ||
      (hd.token_bytes == 2 && hd.vocab_size > 65536)) {
    return corruption(where + "inconsistent header (header_bytes " + std::to_string(header_bytes) +
                      ", token_bytes " + std::to_string(hd.token_bytes) + ", vocab_size " +
                      std::to_string(hd.vocab_size) + ")");
  }
  const uint64_t payload = file_bytes - kShardHeaderBytes;
  const uint64_t mask_bytes =
      ((hd.has_loss_mask ? 1 : 0) + (hd.has_doc_starts ? 1 : 0)) * ((hd.token_count + 7) / 8);
  if (hd.token_count > payload / hd.token_bytes ||
      payload != hd.token_count * hd.token_bytes + mask_bytes) {
    const bool short_file = hd.token_count > payload / hd.token_bytes ||
                            payload < hd.token_count * hd.token_bytes + mask_bytes;
    return corruption(
        where + (short_file ? "truncated" : "trailing bytes") + ": header says " +
        std::to_string(hd.token_count) + " tokens of " + std::to_string(hd.token_bytes) + " bytes" +
        (mask_bytes > 0 ? " and " + std::to_string(mask_bytes) + " bytes of masks" : "") +
        ", file has " + std::to_string(payload) + " payload bytes");
  }
  return hd;
}

}  // namespace

Status write_token_shard(const std::string& path, std::span<const uint32_t> tokens,
                         uint32_t vocab_size, uint32_t token_bytes, const ShardExtras& extras) {
  for (const auto& [bits, what] :
       {std::pair{extras.trained, "loss-mask"}, std::pair{extras.doc_starts, "document-start"}}) {
    if (!bits.empty() && bits.size() != tokens.size()) {
      return invalid_argument("token shard " + path + ": " + std::to_string(bits.size()) + " " +
                              what + " entries for " + std::to_string(tokens.size()) + " tokens");
    }
  }
  if (vocab_size == 0 || vocab_size > kMaxVocab) {
    return invalid_argument("token shard " + path + ": vocab_size " + std::to_string(vocab_size) +
                            " is outside [1, 2^31 - 1]");
  }
  if (token_bytes == 0) token_bytes = vocab_size <= 65536 ? 2 : 4;
  if ((token_bytes != 2 && token_bytes != 4) || (token_bytes == 2 && vocab_size > 65536)) {
    return invalid_argument("token shard " + path + ": token_bytes " + std::to_string(token_bytes) +
                            " cannot hold vocab_size " + std::to_string(vocab_size) +
                            " (use 2 for vocab <= 65536, else 4)");
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] >= vocab_size) {
      return invalid_argument("token shard " + path + ": token " + std::to_string(tokens[i]) +
                              " at index " + std::to_string(i) + " is outside vocab_size " +
                              std::to_string(vocab_size));
    }
  }
  const bool mask = !extras.trained.empty(), starts = !extras.doc_starts.empty();
  const size_t token_payload = tokens.size() * token_bytes, bit_bytes = (tokens.size() + 7) / 8;
  std::vector<unsigned char> bytes(
      kShardHeaderBytes + token_payload + ((mask ? 1 : 0) + (starts ? 1 : 0)) * bit_bytes, 0);
  unsigned char* h = bytes.data();
  encode_tokens(tokens, token_bytes, h + kShardHeaderBytes);
  if (mask) put_bits(extras.trained, h + kShardHeaderBytes + token_payload);
  if (starts) {
    put_bits(extras.doc_starts, h + kShardHeaderBytes + token_payload + (mask ? bit_bytes : 0));
  }
  std::memcpy(h, kShardMagic, sizeof(kShardMagic));
  const bool v2 = mask || starts || extras.block_tokens != 0;
  put_u32(h + kOffVersion, v2 ? kShardVersion : 1);
  if (v2) {
    put_u32(h + kOffFlags, (mask ? kFlagLossMask : 0) | (starts ? kFlagDocStarts : 0));
    put_u32(h + kOffBlockTokens, extras.block_tokens);
  }
  put_u32(h + kOffHeaderBytes, kShardHeaderBytes);
  put_u32(h + kOffTokenBytes, token_bytes);
  put_u32(h + kOffVocab, vocab_size);
  put_u64(h + kOffCount, tokens.size());
  put_u32(h + kOffPayloadCrc, crc32(h + kShardHeaderBytes, bytes.size() - kShardHeaderBytes));
  put_u32(h + kOffHeaderCrc, header_crc(h));
  return atomic_write_file(
      path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

StatusOr<TokenShard> TokenShard::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return not_found("token shard " + path + ": no such file");
    return errno_status("open token shard " + path, errno);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return errno_status("stat token shard " + path, err);
  }
  TokenShard shard;
  shard.path_ = path;
  shard.map_bytes_ = static_cast<size_t>(st.st_size);
  if (shard.map_bytes_ > 0) {
    void* m = ::mmap(nullptr, shard.map_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return errno_status("mmap token shard " + path, err);
    }
    shard.map_ = m;
  }
  ::close(fd);  // the mapping stays valid
  const auto* bytes = static_cast<const unsigned char*>(shard.map_);
  ZT_ASSIGN_OR_RETURN(shard.header_, parse_header(path, bytes, shard.map_bytes_));
  shard.payload_ = bytes + kShardHeaderBytes;
  const unsigned char* bits =
      shard.payload_ + shard.header_.token_count * shard.header_.token_bytes;
  if (shard.header_.has_loss_mask) {
    shard.mask_ = bits;
    bits += (shard.header_.token_count + 7) / 8;
  }
  if (shard.header_.has_doc_starts) shard.starts_ = bits;
  const uint64_t payload_bytes = shard.map_bytes_ - kShardHeaderBytes;
  const uint32_t computed = crc32(shard.payload_, payload_bytes);
  if (computed != shard.header_.payload_crc32) {
    return corruption("token shard " + path + ": payload checksum mismatch (stored " +
                      hex32(shard.header_.payload_crc32) + ", computed " + hex32(computed) + ")");
  }
  // A CRC-clean payload can still hold an id the header's vocab excludes if
  // a buggy writer produced it; catch that here rather than in an embedding.
  for (uint64_t i = 0; i < shard.size(); ++i) {
    if (shard.token(i) >= shard.header_.vocab_size) {
      return corruption("token shard " + path + ": token " + std::to_string(shard.token(i)) +
                        " at index " + std::to_string(i) + " is outside vocab_size " +
                        std::to_string(shard.header_.vocab_size));
    }
  }
  return shard;
}

TokenShard::TokenShard(TokenShard&& other) noexcept { *this = std::move(other); }

TokenShard& TokenShard::operator=(TokenShard&& other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    header_ = other.header_;
    map_ = other.map_;
    map_bytes_ = other.map_bytes_;
    payload_ = other.payload_;
    mask_ = other.mask_;
    starts_ = other.starts_;
    other.starts_ = nullptr;
    other.map_ = nullptr;
    other.map_bytes_ = 0;
    other.payload_ = nullptr;
    other.mask_ = nullptr;
  }
  return *this;
}

TokenShard::~TokenShard() { unmap(); }

void TokenShard::unmap() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
  map_ = nullptr;
}

uint32_t TokenShard::token(uint64_t index) const {
  ZT_CHECK(index < header_.token_count, "token index ", index, " of ", header_.token_count);
  const unsigned char* p = payload_ + index * header_.token_bytes;
  return header_.token_bytes == 2 ? uint32_t{p[0]} | uint32_t{p[1]} << 8 : get_u32(p);
}

void TokenShard::copy(uint64_t begin, uint64_t count, int32_t* out) const {
  ZT_CHECK(begin + count <= header_.token_count, "copy [", begin, ", ", begin + count, ") of ",
           header_.token_count);
  const unsigned char* p = payload_ + begin * header_.token_bytes;
  if (header_.token_bytes == 2) {
    for (uint64_t i = 0; i < count; ++i)
      out[i] = static_cast<int32_t>(uint32_t{p[2 * i]} | uint32_t{p[2 * i + 1]} << 8);
  } else {
    for (uint64_t i = 0; i < count; ++i) out[i] = static_cast<int32_t>(get_u32(p + 4 * i));
  }
}

void TokenShard::copy_trained(uint64_t begin, uint64_t count, uint8_t* out) const {
  ZT_CHECK(begin + count <= header_.token_count, "copy_trained [", begin, ", ", begin + count,
           ") of ", header_.token_count);
  if (mask_ == nullptr) {
    std::fill_n(out, count, uint8_t{1});
    return;
  }
  get_bits(mask_, begin, count, out);
}

void TokenShard::copy_doc_starts(uint64_t begin, uint64_t count, uint8_t* out) const {
  ZT_CHECK(begin + count <= header_.token_count, "copy_doc_starts [", begin, ", ", begin + count,
           ") of ", header_.token_count);
  get_bits(starts_, begin, count, out);
}

}  // namespace zerotrain::train
