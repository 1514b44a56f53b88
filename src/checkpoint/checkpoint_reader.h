// CheckpointReader: any flat range of Ψ of any model-state tensor of a
// checkpoint, whatever world size and stage wrote it. This is what makes a
// checkpoint load at another world size or stage (DeepSpeed's "universal
// checkpoint", built in) and what export streams from: it reads from each
// shard only the overlapping values, chunk-checked, and opens a shard only
// when a range first touches it.
//
//   ZT_ASSIGN_OR_RETURN(CheckpointReader r, CheckpointReader::open(dir + "/" + tag));
//   ZT_RETURN_IF_ERROR(r.read("exp_avg", range.offset, range.count, dst));
//
// Elements no shard holds (alignment gaps between tensors) read as zero.
// Thread-safety: one owner.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/manifest.h"
#include "checkpoint/shard_file.h"
#include "core/status.h"

namespace zerotrain::checkpoint {

class CheckpointReader {
 public:
  // Reads and checks the manifest of `tag_dir`.
  static StatusOr<CheckpointReader> open(const std::string& tag_dir);

  const Manifest& manifest() const { return manifest_; }
  const std::string& tag_dir() const { return tag_dir_; }
  // "master" or one of manifest().state_names.
  std::vector<std::string> tensor_names() const;

  // Values [offset, offset + count) of Ψ of tensor `name`.
  Status read(std::string_view name, int64_t offset, int64_t count, float* out);
  // Opens and checks every shard (size, header) without reading values.
  Status check_shards();

 private:
  StatusOr<const ShardReader*> shard(size_t index);

  std::string tag_dir_;
  Manifest manifest_;
  std::vector<std::optional<ShardReader>> shards_;
};

}  // namespace zerotrain::checkpoint
