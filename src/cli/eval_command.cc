// `zerotrain eval --model PATH --data DIR|TEXT_FILE`: the mean loss and
// perplexity of a checkpoint, an HF model directory or a safetensors file
// on token shards (the val split, or --split), or on a text file through the
// model's tokenizer. Targets a loss mask excludes are not counted.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/adapter_flags.h"
#include "checkpoint/peft_adapter.h"
#include "checkpoint/quantized_base.h"
#include "core/file_read.h"
#include "train/data/dataset.h"
#include "train/evaluate.h"
#include "train/text_codec.h"

namespace zerotrain::cli {
namespace {

struct EvalFlags {
  Quant4Flags quant4;  // evaluate a QLoRA adapter on the 4-bit base it trained over
  const CLI::App* cmd = nullptr;
  std::string model, data, split = "val", tokenizer, adapter;
  int64_t seq_len = 0, batch = 4;
  uint64_t max_windows = 0;
  bool json = false;
};

int eval_fail(const Status& s) {
  std::cerr << "zerotrain eval: " << s.to_string() << "\n";
  return s.code() == StatusCode::kIoError ? 1 : 2;
}

int run_eval(const EvalFlags& f) {
  auto m0 = checkpoint::open_model_source(f.model);
  if (!m0.ok()) return eval_fail(m0.status());
  auto q = quant4_options(f.cmd, f.quant4);
  if (!q.ok()) return eval_fail(q.status());
  if (q->has_value())
    if (Status s = checkpoint::round_base_to_4bit(*m0, **q); !s.ok()) return eval_fail(s);
  if (!f.adapter.empty())
    if (Status s = checkpoint::apply_peft_adapter(*m0, f.adapter); !s.ok()) return eval_fail(s);
  auto info = m0->spec.family->info(m0->spec.config);
  if (!info.ok()) return eval_fail(info.status());
  const int64_t T = f.seq_len > 0 ? f.seq_len : std::min<int64_t>(info->max_seq, 1024);
  auto m = train::load_inference_model(std::move(m0).value(), f.model, f.batch, T);
  if (!m.ok()) return eval_fail(m.status());
  std::shared_ptr<train::TokenDataset> data;
  std::string what;
  if (std::filesystem::is_directory(f.data)) {
    auto ds = train::TokenDataset::open_split(f.data, f.split);
    if (!ds.ok()) return eval_fail(ds.status());
    data = std::make_shared<train::TokenDataset>(std::move(ds).value());
    what = f.data + " (" + f.split + ")";
  } else {
    auto codec = train::TextCodec::resolve(f.tokenizer, m->source_dir, info->vocab_size);
    if (!codec.ok()) return eval_fail(codec.status());
    auto text = read_text_file(f.data);
    if (!text.ok()) return eval_fail(text.status());
    auto ids = codec->encode(*text, true);
    if (!ids.ok()) return eval_fail(ids.status().with_context(f.data));
    std::vector<uint32_t> tokens(ids->begin(), ids->end());
    data = std::make_shared<train::TokenDataset>(train::TokenDataset::from_tokens(
        std::move(tokens), static_cast<uint32_t>(info->vocab_size)));
    what = f.data + " through " + codec->name();
  }
  if (data->block_tokens() != 0 && data->block_tokens() != T) {
    return eval_fail(invalid_argument(
        "the data holds examples in blocks of " + std::to_string(data->block_tokens()) +
        " tokens: give --seq-len " + std::to_string(data->block_tokens())));
  }
  if (data->vocab_size() > info->vocab_size) {
    return eval_fail(invalid_argument("the data's vocab_size " +
                                      std::to_string(data->vocab_size()) + " exceeds the model's " +
                                      std::to_string(info->vocab_size)));
  }
  auto r = train::evaluate(*m->module, *data, T, f.batch, f.max_windows);
  if (!r.ok()) return eval_fail(r.status());
  if (f.json) {
    std::cout << nlohmann::json{{"mean_loss", r->mean_loss},
                                {"perplexity", r->perplexity},
                                {"targets", r->targets},
                                {"windows", r->windows},
                                {"seq_len", T},
                                {"seconds", r->seconds}}
                     .dump()
              << "\n";
    return 0;
  }
  std::printf(
      "%s on %s: mean loss %.6f, perplexity %.4f over %llu targets (%llu windows of %lld) "
      "in %.2f s\n",
      m->description.c_str(), what.c_str(), r->mean_loss, r->perplexity,
      static_cast<unsigned long long>(r->targets), static_cast<unsigned long long>(r->windows),
      static_cast<long long>(T), r->seconds);
  return 0;
}

}  // namespace

Runner add_eval_command(CLI::App& app) {
  auto f = std::make_shared<EvalFlags>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "mean loss and perplexity of a model on token shards or a text file");
  cmd->add_option("--adapter", f->adapter,
                  "a PEFT LoRA adapter directory, merged into --model's weights at load");
  cmd->add_option("--model", f->model,
                  "checkpoint directory (or tag), HF model directory, or .safetensors file")
      ->required();
  cmd->add_option("--data", f->data, "token shard directory, or a text file")->required();
  cmd->add_option("--split", f->split, "shards to read: val or train")
      ->check(CLI::IsMember({"val", "train"}))
      ->capture_default_str();
  cmd->add_option("--tokenizer", f->tokenizer, "for a text file (default: beside the model)");
  cmd->add_option("--seq-len", f->seq_len, "window length (default: the model's, at most 1024)");
  cmd->add_option("--batch", f->batch, "windows a forward")->capture_default_str();
  cmd->add_option("--max-windows", f->max_windows, "evaluate only the first N windows");
  cmd->add_flag("--json", f->json, "print the result as JSON");
  add_quant4_flags(cmd, f->quant4);
  f->cmd = cmd;
  return [f]() { return run_eval(*f); };
}

}  // namespace zerotrain::cli
