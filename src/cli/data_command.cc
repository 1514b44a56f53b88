// `zerotrain data tokenize IN OUT_DIR [--tokenizer PATH ...] [--shard-tokens N]
// [--val-fraction F]` (byte-level tokens, or a Hugging Face tokenizer's with
// chat / prompt-completion loss masks, into train/val shards) and
// `zerotrain data generate OUT_DIR` (the generated default corpus as shards).
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "text/tokenizer.h"
#include "train/data/corpus.h"
#include "train/data/example_tokenize.h"
#include "train/data/tokenizer.h"

namespace zerotrain::cli {
namespace {

struct DataFlags {
  std::string input, output;
  uint64_t shard_tokens = train::kDefaultShardTokens;
  double val_fraction = train::kDefaultValFraction;
  uint64_t corpus_bytes = 400000, seed = 1337;
  std::string tokenizer, format = "auto";
  train::ExampleTokenizeOptions examples;
  bool no_eos = false;
};

int report(const Status& s, const train::TokenizeSummary* summary, const std::string& out) {
  if (!s.ok()) {
    std::cerr << "zerotrain data: " << s.to_string() << "\n";
    return s.code() == StatusCode::kIoError ? 1 : 2;
  }
  if (summary != nullptr) {
    std::cout << "wrote " << summary->files.size() << " shard(s) to " << out << ": "
              << summary->train_tokens << " train tokens, " << summary->val_tokens << " val tokens";
    if (!summary->layout.empty()) {
      std::cout << "; " << summary->examples << " example(s), " << summary->layout << ", "
                << summary->trained_tokens << " trained train tokens";
      if (summary->truncated > 0) {
        std::cout << ", " << summary->truncated << " example(s) cut to the block";
      }
    }
    std::cout << "\n";
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
      "tokenize",
      "tokenize a text or JSON Lines file into OUT_DIR/train_*.bin and val_*.bin (bytes, or "
      "--tokenizer's ids)");
  tok->add_option("input", f->input, "text file, or JSON Lines (.jsonl) of examples")->required();
  tok->add_option("output", f->output, "output directory")->required();
  tok->add_option("--tokenizer", f->tokenizer,
                  "Hugging Face tokenizer: tokenizer.json, a model directory holding it, or "
                  "GPT-2's vocab.json + merges.txt directory (default: bytes)");
  tok->add_option("--format", f->format, "auto (.jsonl/.json: jsonl), text or jsonl")
      ->check(CLI::IsMember({"auto", "text", "jsonl"}))
      ->capture_default_str();
  tok->add_option("--text-field", f->examples.text_field, "JSON Lines key of a text example")
      ->capture_default_str();
  tok->add_option("--chat-format", f->examples.chat_format,
                  "how {\"messages\"} records become text: auto, chatml, llama3, llama2, plain")
      ->capture_default_str();
  tok->add_option("--seq-len", f->examples.seq_len,
                  "put each example in its own block of this many tokens (cut and padded, "
                  "padding ignored); train with the same --seq-len");
  tok->add_flag("--pack", f->examples.pack,
                "with --seq-len: as many whole examples a block as fit, each attending only to "
                "itself");
  tok->add_flag("--no-eos", f->no_eos, "no end-of-text after text examples and completions");
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
    if (tok->parsed() && !f->tokenizer.empty()) {
      auto tokenizer = text::Tokenizer::load(f->tokenizer);
      if (!tokenizer.ok()) return report(tokenizer.status(), nullptr, f->output);
      train::ExampleTokenizeOptions o = f->examples;
      o.shard_tokens = f->shard_tokens;
      o.val_fraction = f->val_fraction;
      o.append_eos = !f->no_eos;
      o.jsonl =
          f->format == "jsonl" ||
          (f->format == "auto" && (f->input.ends_with(".jsonl") || f->input.ends_with(".json")));
      train::TokenizeSummary summary;
      Status s = train::tokenize_examples(f->input, f->output, *tokenizer, o, &summary);
      return report(s, &summary, f->output);
    }
    if (tok->parsed()) {
      if (f->examples.seq_len > 0 || f->examples.pack || f->format == "jsonl") {
        return report(invalid_argument("data tokenize: --seq-len, --pack and JSON Lines need "
                                       "--tokenizer (bytes are one stream)"),
                      nullptr, f->output);
      }
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
