// CheckpointReader: flat ranges gathered from whichever shards hold them.
#include "checkpoint/checkpoint_reader.h"

#include <algorithm>
#include <cstring>

namespace zerotrain::checkpoint {

StatusOr<CheckpointReader> CheckpointReader::open(const std::string& tag_dir) {
  CheckpointReader r;
  r.tag_dir_ = tag_dir;
  ZT_ASSIGN_OR_RETURN(r.manifest_, read_manifest(tag_dir));
  r.shards_.resize(r.manifest_.shards.size());
  return r;
}

std::vector<std::string> CheckpointReader::tensor_names() const {
  std::vector<std::string> names{"master"};
  names.insert(names.end(), manifest_.state_names.begin(), manifest_.state_names.end());
  return names;
}

StatusOr<const ShardReader*> CheckpointReader::shard(size_t index) {
  if (!shards_[index]) {
    const ShardEntry& e = manifest_.shards[index];
    ZT_ASSIGN_OR_RETURN(ShardReader s,
                        ShardReader::open(tag_dir_ + "/" + e.file, e, tensor_names()));
    shards_[index].emplace(std::move(s));
  }
  return &*shards_[index];
}

Status CheckpointReader::check_shards() {
  for (size_t i = 0; i < shards_.size(); ++i) ZT_RETURN_IF_ERROR(shard(i).status());
  return ok_status();
}

Status CheckpointReader::read(std::string_view name, int64_t offset, int64_t count, float* out) {
  const std::vector<std::string> names = tensor_names();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) {
    return not_found("checkpoint " + tag_dir_ + " holds no model-state tensor \"" +
                     std::string(name) + "\"");
  }
  const int tensor = static_cast<int>(it - names.begin());
  std::memset(out, 0, static_cast<size_t>(count) * sizeof(float));
  for (size_t s = 0; s < manifest_.shards.size(); ++s) {
    int64_t local = 0;  // position of the range within the shard's concatenation
    for (const Range& r : manifest_.shards[s].ranges) {
      const int64_t lo = std::max(offset, r.offset), hi = std::min(offset + count, r.end());
      if (lo < hi) {
        ZT_ASSIGN_OR_RETURN(const ShardReader* reader, shard(s));
        ZT_RETURN_IF_ERROR(reader->read(tensor, local + (lo - r.offset), hi - lo, out + (lo - offset)));
      }
      local += r.count;
    }
  }
  return ok_status();
}

}  // namespace zerotrain::checkpoint
