// The embedded default corpus: English-like text generated from a seeded
// template grammar (arithmetic facts, counting, small stories whose numbers
// add up, subject-verb-object sentences, fixed facts, weekday and month
// order), so `zerotrain train` with no --data needs no download. The same
// seed gives the same bytes on every platform; a few hundred KB is enough
// for a 1–3 M parameter byte-level GPT to fall from ln 256 ≈ 5.55 to well
// under 2.5 nats/token in a few hundred steps.
//
//   std::string text = generate_corpus({.seed = 1337, .target_bytes = 400000});
//   ZT_ASSIGN_OR_RETURN(CorpusSplits s, default_corpus_splits({}, 0.1));  // vocab 256
//   ZT_RETURN_IF_ERROR(write_default_corpus("data", {}, 1 << 20, 0.1));
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "train/data/dataset.h"

namespace zerotrain::train {

struct CorpusOptions {
  uint64_t seed = 1337;
  // The text is exactly this long (the last paragraph is cut where it ends).
  uint64_t target_bytes = 400000;
};

// Only a-z, space, ",.:?" and newline occur (numbers are spelt out).
std::string generate_corpus(const CorpusOptions& options);

struct CorpusSplits {
  std::shared_ptr<const TokenDataset> train;  // first tokens
  std::shared_ptr<const TokenDataset> val;    // last val_token_count(n, val_fraction); may be empty
};

// The generated corpus as byte tokens (vocab 256), split as
// write_token_splits splits (val from the end). InvalidArgument when
// val_fraction is outside [0, 1).
StatusOr<CorpusSplits> default_corpus_splits(const CorpusOptions& options, double val_fraction);

// Writes the generated corpus as train/val shards (see write_token_splits).
Status write_default_corpus(const std::string& output_dir, const CorpusOptions& options,
                            uint64_t shard_tokens, double val_fraction);

}  // namespace zerotrain::train
