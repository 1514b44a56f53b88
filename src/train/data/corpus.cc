// Generated default corpus: paragraphs of template sentences.
#include "train/data/corpus.h"

#include "train/data/corpus_grammar.h"
#include "train/data/tokenizer.h"

namespace zerotrain::train {

std::string generate_corpus(const CorpusOptions& options) {
  SplitMix64 rng(mix_seed(options.seed, 0x636F72707573ull));  // "corpus"
  std::string text;
  text.reserve(options.target_bytes + 512);
  while (text.size() < options.target_bytes) {
    const int sentences = 3 + static_cast<int>(rng.below(5));
    for (int i = 0; i < sentences; ++i) {
      if (i > 0) text += ' ';
      corpus_detail::append_sentence(rng, &text);
    }
    text += '\n';
  }
  text.resize(options.target_bytes);
  return text;
}

StatusOr<CorpusSplits> default_corpus_splits(const CorpusOptions& options, double val_fraction) {
  if (!(val_fraction >= 0.0 && val_fraction < 1.0)) {
    return invalid_argument("default corpus: val_fraction " + std::to_string(val_fraction) +
                            " is outside [0, 1)");
  }
  const std::vector<uint32_t> tokens = ByteTokenizer().encode(generate_corpus(options));
  const uint64_t val = val_token_count(tokens.size(), val_fraction);
  const auto mid = tokens.end() - static_cast<std::ptrdiff_t>(val);
  CorpusSplits s;
  s.train = std::make_shared<const TokenDataset>(
      TokenDataset::from_tokens(std::vector<uint32_t>(tokens.begin(), mid), kByteVocabSize));
  s.val = std::make_shared<const TokenDataset>(
      TokenDataset::from_tokens(std::vector<uint32_t>(mid, tokens.end()), kByteVocabSize));
  return s;
}

Status write_default_corpus(const std::string& output_dir, const CorpusOptions& options,
                            uint64_t shard_tokens, double val_fraction) {
  const std::vector<uint32_t> tokens = ByteTokenizer().encode(generate_corpus(options));
  return write_token_splits(tokens, kByteVocabSize, output_dir, shard_tokens, val_fraction);
}

}  // namespace zerotrain::train
