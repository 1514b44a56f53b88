// One rank's shard of a checkpoint: its flat ranges of Ψ and, for each
// model-state tensor ("master", then the optimizer's states such as
// "exp_avg", "exp_avg_sq"), the fp32 values of those ranges concatenated.
//
//   [0, 8)        magic "ZTCKSHRD"
//   [8, 12)       u32 format version (little-endian)
//   [12, 16)      u32 H, bytes of the header JSON
//   [16, 16 + H)  header JSON: rank, ranges [[offset, count], ...],
//                 chunk_elements, tensors [{name, numel, offset (bytes
//                 from the data start), chunk_crc32 [...]}]
//   zero padding to a multiple of 64 bytes, then the data.
//
// Every chunk of chunk_elements values has its own CRC-32, so a reader that
// re-partitions reads and verifies only the chunks it needs; the manifest
// holds the CRC-32 of the header bytes [0, data start) and the file size,
// so a truncated or altered shard is refused before any value is used.
//
// Thread-safety: ShardReader::read may run concurrently (pread); the rest
// needs one owner.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/manifest.h"
#include "core/range.h"
#include "core/status.h"
#include "core/tensor.h"

namespace zerotrain::checkpoint {

inline constexpr int64_t kChunkElements = 1 << 18;  // 1 MiB of fp32

struct NamedValues {
  std::string name;
  ConstTensor values;  // fp32, sum of the ranges' counts; device or host memory
};

struct WrittenShard {
  int64_t bytes = 0;
  uint32_t header_crc32 = 0;
};

// Writes `path` atomically. Every tensor holds sum(ranges.count) values.
StatusOr<WrittenShard> write_shard(const std::string& path, int rank,
                                   const std::vector<Range>& ranges,
                                   const std::vector<NamedValues>& tensors);

// The manifest entry for a shard just written (rank, size, header
// checksum, ranges), read back from the file itself.
StatusOr<ShardEntry> describe_shard(const std::string& path);

class ShardReader {
 public:
  // Checks the file against the manifest's entry: size, header checksum,
  // ranges; the tensors must be `names`. Corruption / NotFound naming the path.
  static StatusOr<ShardReader> open(const std::string& path, const ShardEntry& expected,
                                    const std::vector<std::string>& names);
  ShardReader(ShardReader&& other) noexcept;
  ShardReader& operator=(ShardReader&& other) noexcept;
  ~ShardReader();

  // Values [first, first + count) of tensor `tensor` (index into names),
  // counted within the shard's concatenated ranges; every chunk touched is
  // checked against its CRC-32.
  Status read(int tensor, int64_t first, int64_t count, float* out) const;
  const std::string& path() const { return path_; }

 private:
  ShardReader() = default;
  struct Tensor {
    std::string name;
    int64_t numel = 0, offset = 0;  // offset: bytes from the file start
    std::vector<uint32_t> chunk_crc;
  };
  std::string path_;
  int fd_ = -1;
  int64_t chunk_elements_ = kChunkElements;
  std::vector<Tensor> tensors_;
};

}  // namespace zerotrain::checkpoint
