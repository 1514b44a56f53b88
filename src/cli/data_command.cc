// `zerotrain data tokenize IN_TEXT OUT_DIR [--shard-tokens N] [--val-fraction F]`
// (byte-level tokens into train/val shards) and `zerotrain data generate
// OUT_DIR` (the generated default corpus as shards).
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "train/data/corpus.h"
#include "train/data/tokenizer.h"

namespace zerotrain::cli {
namespace {

struct DataFlags {
  std::string input, output;
  uint64_t shard_tokens = train::kDefaultShardTokens;
  double val_fraction = train::kDefaultValFraction;
  uint64_t corpus_bytes = 400000, seed = 1337;
};

int report(const Status& s, const train::TokenizeSummary* summary, const std::string& out) {
  if (!s.ok()) {
    std::cerr << "zerotrain data: " << s.to_string() << "\n";
    return s.code() == StatusCode::kIoError ? 1 : 2;
  }
  if (summary != nullptr) {
    std::cout << "wrote " << summary->files.size() << " shard(s) to " << out << ": "
              << summary->train_tokens << " train tokens, " << summary->val_tokens
              << " val tokens\n";
  } else {
    std::cout << "wrote the generated corpus to " << out << "\n";
  }
  return 0;
}

}  // namespace

Runner add_data_command(CLI::App& app) {
  auto f = std::make_shared<DataFlags>();
  CLI::App* data = app.add_subcommand("data", "prepare training data (token shards)");
  data->require_subcommand(1);
  CLI::App* tok = data->add_subcommand(
      "tokenize", "byte-tokenize a text file into OUT_DIR/train_*.bin and val_*.bin");
  tok->add_option("input", f->input, "text file")->required();
  tok->add_option("output", f->output, "output directory")->required();
  CLI::App* gen = data->add_subcommand("generate", "write the generated default corpus as shards");
  gen->add_option("output", f->output, "output directory")->required();
  gen->add_option("--bytes", f->corpus_bytes, "corpus size in bytes")->capture_default_str();
  gen->add_option("--seed", f->seed, "grammar seed")->capture_default_str();
  for (CLI::App* c : {tok, gen}) {
    c->add_option("--shard-tokens", f->shard_tokens, "tokens per shard file")
        ->capture_default_str();
    c->add_option("--val-fraction", f->val_fraction, "fraction held out for validation (end)")
        ->capture_default_str();
  }
  return [tok, gen, f]() {
    if (tok->parsed()) {
      train::TokenizeSummary summary;
      Status s = train::tokenize_text_file(f->input, f->output, f->shard_tokens, f->val_fraction,
                                           &summary);
      return report(s, &summary, f->output);
    }
    (void)gen;
    Status s =
        train::write_default_corpus(f->output, {.seed = f->seed, .target_bytes = f->corpus_bytes},
                                    f->shard_tokens, f->val_fraction);
    return report(s, nullptr, f->output);
  };
}

}  // namespace zerotrain::cli
