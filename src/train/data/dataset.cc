// TokenDataset: shard concatenation and in-memory token sequences.
#include "train/data/dataset.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace zerotrain::train {

StatusOr<TokenDataset> TokenDataset::open(const std::vector<std::string>& paths) {
  if (paths.empty()) return invalid_argument("token dataset: no shard files given");
  TokenDataset ds;
  for (const std::string& path : paths) {
    ZT_ASSIGN_OR_RETURN(TokenShard shard, TokenShard::open(path));
    if (!ds.shards_.empty() && shard.header().vocab_size != ds.vocab_size_) {
      return invalid_argument("token dataset: " + path + " has vocab_size " +
                              std::to_string(shard.header().vocab_size) + " but " +
                              ds.shards_.front().path() + " has " + std::to_string(ds.vocab_size_));
    }
    if (!ds.shards_.empty() && shard.header().block_tokens != ds.block_tokens_) {
      return invalid_argument("token dataset: " + path + " holds examples padded to " +
                              std::to_string(shard.header().block_tokens) + " tokens but " +
                              ds.shards_.front().path() + " to " +
                              std::to_string(ds.block_tokens_) + " (0: packed)");
    }
    ds.vocab_size_ = shard.header().vocab_size;
    ds.block_tokens_ = shard.header().block_tokens;
    ds.has_loss_mask_ = ds.has_loss_mask_ || shard.header().has_loss_mask;
    ds.has_doc_starts_ = ds.has_doc_starts_ || shard.header().has_doc_starts;
    ds.shard_begin_.push_back(ds.size_);
    ds.size_ += shard.size();
    ds.shards_.push_back(std::move(shard));
  }
  return ds;
}

StatusOr<TokenDataset> TokenDataset::open_split(const std::string& dir, std::string_view split) {
  const std::string prefix = std::string(split) + "_";
  std::vector<std::string> paths;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return not_found("token dataset: cannot list directory " + dir + ": " + ec.message());
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.size() > prefix.size() + 4 && name.starts_with(prefix) && name.ends_with(".bin")) {
      paths.push_back(entry.path().string());
    }
  }
  if (paths.empty()) {
    return not_found("token dataset: no " + prefix + "*.bin shards in " + dir +
                     " (create them with `zerotrain data tokenize`)");
  }
  std::sort(paths.begin(), paths.end());
  return open(paths);
}

TokenDataset TokenDataset::from_tokens(std::vector<uint32_t> tokens, uint32_t vocab_size,
                                       std::vector<uint8_t> trained, uint32_t block_tokens,
                                       std::vector<uint8_t> doc_starts) {
  ZT_CHECK(trained.empty() || trained.size() == tokens.size(), "mask of ", trained.size(), " for ",
           tokens.size(), " tokens");
  ZT_CHECK(doc_starts.empty() || doc_starts.size() == tokens.size(), "starts of ",
           doc_starts.size(), " for ", tokens.size(), " tokens");
  ZT_CHECK(vocab_size >= 1 && vocab_size <= 0x7FFFFFFFu, "vocab_size ", vocab_size);
  for (size_t i = 0; i < tokens.size(); ++i) {
    ZT_CHECK(tokens[i] < vocab_size, "token ", tokens[i], " at ", i, " >= vocab ", vocab_size);
  }
  TokenDataset ds;
  ds.size_ = tokens.size();
  ds.vocab_size_ = vocab_size;
  ds.memory_ = std::move(tokens);
  ds.has_loss_mask_ = !trained.empty();
  ds.memory_trained_ = std::move(trained);
  ds.block_tokens_ = block_tokens;
  ds.has_doc_starts_ = !doc_starts.empty();
  ds.memory_starts_ = std::move(doc_starts);
  return ds;
}

template <typename Fn>
void TokenDataset::for_each_shard_run(uint64_t begin, uint64_t count, Fn&& fn) const {
  // Last shard starting at or before `begin`; then walk forward.
  size_t s = static_cast<size_t>(std::upper_bound(shard_begin_.begin(), shard_begin_.end(), begin) -
                                 shard_begin_.begin() - 1);
  for (uint64_t done = 0; done < count; ++s) {
    const uint64_t local = begin + done - shard_begin_[s];
    const uint64_t n = std::min(count - done, shards_[s].size() - local);
    fn(shards_[s], local, n, done);
    done += n;
  }
}

void TokenDataset::copy(uint64_t begin, uint64_t count, int32_t* out) const {
  ZT_CHECK(begin <= size_ && count <= size_ - begin, "copy [", begin, ", +", count, ") of ", size_);
  if (shards_.empty()) {
    for (uint64_t i = 0; i < count; ++i) out[i] = static_cast<int32_t>(memory_[begin + i]);
    return;
  }
  for_each_shard_run(begin, count, [&](const TokenShard& shard, uint64_t local, uint64_t n,
                                       uint64_t at) { shard.copy(local, n, out + at); });
}

void TokenDataset::copy_trained(uint64_t begin, uint64_t count, uint8_t* out) const {
  ZT_CHECK(begin <= size_ && count <= size_ - begin, "copy_trained [", begin, ", +", count, ") of ",
           size_);
  if (shards_.empty()) {
    for (uint64_t i = 0; i < count; ++i) {
      out[i] = memory_trained_.empty() ? 1 : memory_trained_[begin + i];
    }
    return;
  }
  for_each_shard_run(begin, count, [&](const TokenShard& shard, uint64_t local, uint64_t n,
                                       uint64_t at) { shard.copy_trained(local, n, out + at); });
}

void TokenDataset::copy_doc_starts(uint64_t begin, uint64_t count, uint8_t* out) const {
  ZT_CHECK(begin <= size_ && count <= size_ - begin, "copy_doc_starts [", begin, ", +", count,
           ") of ", size_);
  if (shards_.empty()) {
    for (uint64_t i = 0; i < count; ++i) {
      out[i] = memory_starts_.empty() ? 0 : memory_starts_[begin + i];
    }
    return;
  }
  for_each_shard_run(begin, count,
                     [&](const TokenShard& shard, uint64_t local, uint64_t n, uint64_t at) {
                       shard.copy_doc_starts(local, n, out + at);
                     });
}

}  // namespace zerotrain::train
