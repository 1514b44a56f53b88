// DataLoader: deterministic, sharded [B, T+1] token windows for one rank.
//
// Window w is dataset tokens [w*T, w*T + T + 1): inputs are its first T
// tokens, targets the last T (shifted by one). The dataset has
// W = floor((N - 1) / T) windows. Each epoch e visits them in the order
// epoch_order(W, seed, e) (a seeded Fisher-Yates shuffle, or 0..W-1 without
// shuffle). All ranks walk that one order: micro-step m of the epoch
// consumes slots [m*B*R, (m+1)*B*R) and rank r takes the contiguous slots
// m*B*R + r*B + j, j < B. An epoch is floor(W / (B*A*R)) optimizer steps of
// A micro-steps (A = grad_accum_steps); the remaining slots are skipped
// (drop-last at the global batch). So any (B, A, R) with the same global
// batch B*A*R sees the same windows in each optimizer step, at every epoch:
// 4 ranks × B=1 equals 1 rank × B=4, rank order. docs/data_format.md has
// the details.
//
//   LoaderOptions o{.seq_len = 64, .micro_batch = 4, .world_size = 2, .rank = 1, .seed = 7};
//   ZT_ASSIGN_OR_RETURN(DataLoader loader, DataLoader::create(dataset, o));
//   TokenBatch batch;
//   loader.next(&batch);                       // batch.tokens is [4, 65]
//   std::string saved = loader.position().to_string();
//   ZT_ASSIGN_OR_RETURN(LoaderPosition p, LoaderPosition::parse(saved));
//   ZT_RETURN_IF_ERROR(loader.restore(p));     // continues with the same batches
//
// Thread-safety: a DataLoader is not thread-safe (one per rank); many
// loaders may share one TokenDataset.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "train/data/dataset.h"

namespace zerotrain::train {

struct LoaderOptions {
  int64_t seq_len = 64;          // T; a window holds T + 1 tokens
  int64_t micro_batch = 1;       // B, train_micro_batch_size_per_gpu
  int64_t grad_accum_steps = 1;  // A, gradient_accumulation_steps
  int64_t world_size = 1;        // R
  int64_t rank = 0;
  uint64_t seed = 0;
  bool shuffle = true;
};

// Where the loader is, for checkpoints. `window` counts the slots of this
// epoch's order already consumed by all ranks together, so the position is
// the same on every rank and does not depend on the world size.
struct LoaderPosition {
  uint64_t seed = 0;
  uint64_t epoch = 0;
  uint64_t window = 0;

  // "seed=7 epoch=1 window=96"
  std::string to_string() const;
  // Inverse of to_string; InvalidArgument quoting the text otherwise.
  static StatusOr<LoaderPosition> parse(std::string_view text);
  bool operator==(const LoaderPosition&) const = default;
};

struct TokenBatch {
  int64_t batch = 0;              // B
  int64_t seq_len = 0;            // T
  std::vector<int32_t> tokens;    // [B, T+1] windows, row-major
  std::vector<uint8_t> trained;   // [B, T+1] with a loss mask (else empty): 0 = not a target
  // [B, T] with packed documents (else empty): the row index where each
  // input token's document begins (Module::forward's doc_starts).
  std::vector<int32_t> doc_starts;
  std::vector<uint64_t> windows;  // [B] window ids (window w starts at token w*T)

  const int32_t* row(int64_t b) const { return tokens.data() + b * (seq_len + 1); }
  // doc_starts for Module::forward: null when the batch is not packed.
  const int32_t* doc_starts_or_null() const {
    return doc_starts.empty() ? nullptr : doc_starts.data();
  }
  // inputs[b, t] = row(b)[t], targets[b, t] = row(b)[t + 1]; both [B, T].
  // A target the loss mask excludes is -1 (ignored by the loss).
  void split(std::vector<int32_t>* inputs, std::vector<int32_t>* targets) const;
};

// A window's document starts (Module::forward's doc_starts) from its
// tokens' begins-a-document bits: out[t] = the last k <= t with bits[k],
// else 0 (a document that began before the window starts at 0 in it).
void window_doc_starts(const uint8_t* bits, int64_t T, int32_t* out);

// W = floor((token_count - 1) / seq_len); 0 when token_count < seq_len + 1.
uint64_t window_count(uint64_t token_count, int64_t seq_len);
// The order in which epoch `epoch` visits windows 0..windows-1: with shuffle,
// Fisher-Yates (i from W-1 down to 1, swap i with SplitMix64::below(i + 1))
// driven by SplitMix64(mix_seed(seed, epoch)); without, the identity.
std::vector<uint64_t> epoch_order(uint64_t windows, uint64_t seed, uint64_t epoch, bool shuffle);

class DataLoader {
 public:
  // InvalidArgument for non-positive sizes, a rank outside [0, world_size),
  // a dataset with fewer windows than one global batch (says how many
  // tokens it has and needs), or one padded to blocks of another length
  // than seq_len.
  static StatusOr<DataLoader> create(std::shared_ptr<const TokenDataset> dataset,
                                     const LoaderOptions& options);

  // This rank's next micro-batch; moves the position by B*R slots and to
  // the next epoch (reshuffled) when this epoch's steps are used up.
  void next(TokenBatch* out);
  TokenBatch next();

  LoaderPosition position() const { return position_; }
  // Continues from `position` (its seed replaces options.seed). The window
  // must be a multiple of B*R (a micro-step boundary of this layout) and at
  // most the epoch's used slots; InvalidArgument with the numbers otherwise.
  // A position saved at another world size restores if it is on an
  // optimizer-step boundary (a multiple of B*A*R), as checkpoints are.
  Status restore(const LoaderPosition& position);

  uint64_t windows() const { return windows_; }
  uint64_t global_batch_windows() const { return global_batch_; }        // B*A*R
  uint64_t steps_per_epoch() const { return windows_ / global_batch_; }  // optimizer steps
  const LoaderOptions& options() const { return options_; }

 private:
  DataLoader() = default;
  void start_epoch(uint64_t epoch);

  std::shared_ptr<const TokenDataset> dataset_;
  LoaderOptions options_;
  uint64_t windows_ = 0;
  uint64_t global_batch_ = 0;
  LoaderPosition position_;
  std::vector<uint64_t> order_;  // [windows_] this epoch's order
};

}  // namespace zerotrain::train
