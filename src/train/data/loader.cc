// Deterministic distributed window loader (see loader.h for the contract).
#include "train/data/loader.h"

#include <charconv>
#include <numeric>

#include "train/data/rng.h"

namespace zerotrain::train {

std::string LoaderPosition::to_string() const {
  return "seed=" + std::to_string(seed) + " epoch=" + std::to_string(epoch) +
         " window=" + std::to_string(window);
}

StatusOr<LoaderPosition> LoaderPosition::parse(std::string_view text) {
  LoaderPosition p;
  const char* keys[3] = {"seed=", "epoch=", "window="};
  uint64_t* fields[3] = {&p.seed, &p.epoch, &p.window};
  std::string_view rest = text;
  for (int i = 0; i < 3; ++i) {
    const std::string_view key = keys[i];
    if (i > 0) {
      if (rest.empty() || rest.front() != ' ') break;
      rest.remove_prefix(1);
    }
    if (!rest.starts_with(key)) break;
    rest.remove_prefix(key.size());
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), *fields[i]);
    if (ec != std::errc() || end == rest.data()) break;
    rest.remove_prefix(static_cast<size_t>(end - rest.data()));
    if (i == 2 && rest.empty()) return p;
  }
  return invalid_argument("loader position \"" + std::string(text) +
                          "\" is not of the form \"seed=S epoch=E window=W\"");
}

void TokenBatch::split(std::vector<int32_t>* inputs, std::vector<int32_t>* targets) const {
  inputs->resize(static_cast<size_t>(batch * seq_len));
  targets->resize(static_cast<size_t>(batch * seq_len));
  for (int64_t b = 0; b < batch; ++b) {
    const int32_t* r = row(b);
    std::copy(r, r + seq_len, inputs->data() + b * seq_len);
    std::copy(r + 1, r + 1 + seq_len, targets->data() + b * seq_len);
    if (trained.empty()) continue;
    const uint8_t* m = trained.data() + b * (seq_len + 1) + 1;
    int32_t* y = targets->data() + b * seq_len;
    for (int64_t t = 0; t < seq_len; ++t) {
      if (m[t] == 0) y[t] = -1;
    }
  }
}

void window_doc_starts(const uint8_t* bits, int64_t T, int32_t* out) {
  int32_t start = 0;
  for (int64_t t = 0; t < T; ++t) {
    if (bits[t]) start = static_cast<int32_t>(t);
    out[t] = start;
  }
}

uint64_t window_count(uint64_t token_count, int64_t seq_len) {
  if (seq_len <= 0 || token_count < 1) return 0;
  return (token_count - 1) / static_cast<uint64_t>(seq_len);
}

std::vector<uint64_t> epoch_order(uint64_t windows, uint64_t seed, uint64_t epoch, bool shuffle) {
  std::vector<uint64_t> order(windows);
  std::iota(order.begin(), order.end(), uint64_t{0});
  if (!shuffle) return order;
  SplitMix64 rng(mix_seed(seed, epoch));
  for (uint64_t i = windows; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

StatusOr<DataLoader> DataLoader::create(std::shared_ptr<const TokenDataset> dataset,
                                        const LoaderOptions& o) {
  if (dataset == nullptr) return invalid_argument("data loader: no dataset");
  if (o.seq_len <= 0 || o.micro_batch <= 0 || o.grad_accum_steps <= 0 || o.world_size <= 0) {
    return invalid_argument("data loader: seq_len " + std::to_string(o.seq_len) + ", micro_batch " +
                            std::to_string(o.micro_batch) + ", grad_accum_steps " +
                            std::to_string(o.grad_accum_steps) + " and world_size " +
                            std::to_string(o.world_size) + " must all be >= 1");
  }
  if (o.rank < 0 || o.rank >= o.world_size) {
    return invalid_argument("data loader: rank " + std::to_string(o.rank) + " is outside [0, " +
                            std::to_string(o.world_size) + ")");
  }
  if (dataset->block_tokens() != 0 && dataset->block_tokens() != o.seq_len) {
    return invalid_argument("data loader: the data holds examples padded to blocks of " +
                            std::to_string(dataset->block_tokens()) +
                            " tokens (`data tokenize --seq-len " +
                            std::to_string(dataset->block_tokens()) + "`); train with seq_len " +
                            std::to_string(dataset->block_tokens()) + ", not " +
                            std::to_string(o.seq_len) + ", or re-tokenize (or use --pack)");
  }
  DataLoader l;
  l.options_ = o;
  l.windows_ = window_count(dataset->size(), o.seq_len);
  l.global_batch_ = static_cast<uint64_t>(o.micro_batch * o.grad_accum_steps * o.world_size);
  if (l.windows_ < l.global_batch_) {
    return invalid_argument(
        "data loader: the dataset has " + std::to_string(dataset->size()) + " tokens, " +
        std::to_string(l.windows_) + " windows of seq_len " + std::to_string(o.seq_len) +
        " + 1; one global batch (micro_batch × grad_accum_steps × world_size = " +
        std::to_string(l.global_batch_) + " windows) needs at least " +
        std::to_string(l.global_batch_ * o.seq_len + 1) + " tokens");
  }
  l.dataset_ = std::move(dataset);
  l.position_.seed = o.seed;
  l.start_epoch(0);
  return l;
}

void DataLoader::start_epoch(uint64_t epoch) {
  position_.epoch = epoch;
  position_.window = 0;
  order_ = epoch_order(windows_, position_.seed, epoch, options_.shuffle);
}

void DataLoader::next(TokenBatch* out) {
  const int64_t b = options_.micro_batch, t = options_.seq_len;
  out->batch = b;
  out->seq_len = t;
  out->tokens.resize(static_cast<size_t>(b * (t + 1)));
  out->windows.resize(static_cast<size_t>(b));
  const bool masked = dataset_->has_loss_mask(), packed = dataset_->has_doc_starts();
  out->trained.resize(masked ? static_cast<size_t>(b * (t + 1)) : 0);
  out->doc_starts.resize(packed ? static_cast<size_t>(b * t) : 0);
  std::vector<uint8_t> bits(packed ? static_cast<size_t>(t) : 0);
  const uint64_t first = position_.window + static_cast<uint64_t>(options_.rank * b);
  for (int64_t j = 0; j < b; ++j) {
    const uint64_t w = order_[first + static_cast<uint64_t>(j)];
    out->windows[j] = w;
    dataset_->copy(w * static_cast<uint64_t>(t), static_cast<uint64_t>(t + 1),
                   out->tokens.data() + j * (t + 1));
    if (masked) {
      dataset_->copy_trained(w * static_cast<uint64_t>(t), static_cast<uint64_t>(t + 1),
                             out->trained.data() + j * (t + 1));
    }
    if (packed) {
      dataset_->copy_doc_starts(w * static_cast<uint64_t>(t), static_cast<uint64_t>(t),
                                bits.data());
      window_doc_starts(bits.data(), t, out->doc_starts.data() + j * t);
    }
  }
  position_.window += static_cast<uint64_t>(b * options_.world_size);
  if (position_.window >= steps_per_epoch() * global_batch_) start_epoch(position_.epoch + 1);
}

TokenBatch DataLoader::next() {
  TokenBatch batch;
  next(&batch);
  return batch;
}

Status DataLoader::restore(const LoaderPosition& p) {
  const uint64_t step = static_cast<uint64_t>(options_.micro_batch * options_.world_size);
  const uint64_t used = steps_per_epoch() * global_batch_;
  if (p.window % step != 0 || p.window > used) {
    return invalid_argument(
        "data loader: cannot restore position \"" + p.to_string() +
        "\": window must be a multiple of micro_batch × world_size = " + std::to_string(step) +
        " and at most the " + std::to_string(used) + " windows an epoch uses");
  }
  position_.seed = p.seed;
  start_epoch(p.window == used ? p.epoch + 1 : p.epoch);
  if (p.window < used) position_.window = p.window;
  return ok_status();
}

}  // namespace zerotrain::train
