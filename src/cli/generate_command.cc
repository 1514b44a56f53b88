// `zerotrain generate --model PATH (--prompt TEXT | --prompt-ids IDS)...`:
// text from a checkpoint, an HF model directory or a safetensors file, with
// a KV cache, greedy or sampled, streamed through the tokenizer's decoder
// as it comes; --json prints the ids and per-token times instead. Several
// prompts generate as one batch (left-padded) and print when all are done.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/adapter_flags.h"
#include "cli/commands.h"
#include "model/decoder.h"
#include "train/data/chat_format.h"
#include "train/evaluate.h"
#include "train/generation.h"
#include "train/generation_config.h"
#include "train/text_codec.h"

namespace zerotrain::cli {
namespace {

struct GenerateFlags {
  Quant4Flags quant4;  // evaluate a QLoRA adapter on the 4-bit base it trained over
  const CLI::App* cmd = nullptr;
  std::string model, tokenizer, adapter, system, chat_format = "auto", dtype = "fp32";
  std::vector<std::string> prompts, prompt_ids, stops;  // each repeatable
  int64_t max_new_tokens = 64, max_seq = 0;
  double temperature = 1.0, top_p = 1.0, repetition_penalty = 1.0;
  int64_t top_k = 0;
  uint64_t seed = 0;
  bool greedy = false, json = false, ignore_eos = false, no_special = false, chat = false;
};

// id joins the stop tokens unless it is one already.
void add_eos(train::GenerateOptions* o, uint32_t id) {
  if (std::find(o->eos.begin(), o->eos.end(), id) == o->eos.end()) o->eos.push_back(id);
}

// --chat: each --prompt is a user turn (after --system, if given) in the
// tokenizer's chat format with the assistant's header after it, as
// apply_chat_template(add_generation_prompt=True); encoded without the
// tokenizer's own specials (the format writes its bos), and the format's
// end-of-turn token ends a reply.
Status chat_prompts(const GenerateFlags& f, train::TextCodec& codec,
                    std::vector<std::vector<int32_t>>* prompts, train::GenerateOptions* o) {
  const text::Tokenizer* tok = codec.tokenizer();
  if (tok == nullptr)
    return invalid_argument("--chat needs a tokenizer with a chat format; " + codec.name() +
                            " has none (give --tokenizer)");
  ZT_ASSIGN_OR_RETURN(train::ChatFormat format, train::chat_format_for(*tok, f.chat_format));
  for (const std::string& text : f.prompts) {
    nlohmann::json messages = nlohmann::json::array();
    if (!f.system.empty()) messages.push_back({{"role", "system"}, {"content", f.system}});
    messages.push_back({{"role", "user"}, {"content", text}});
    ZT_ASSIGN_OR_RETURN(std::string rendered,
                        train::render_generation_prompt(format, messages, *tok));
    ZT_ASSIGN_OR_RETURN(std::vector<int32_t> ids, codec.encode(rendered, false));
    prompts->push_back(std::move(ids));
  }
  const std::optional<uint32_t> eot = train::end_of_turn(format, *tok);
  if (eot && !f.ignore_eos) add_eos(o, *eot);
  return ok_status();
}

int generate_fail(const Status& s) {
  std::cerr << "zerotrain generate: " << s.to_string() << "\n";
  return s.code() == StatusCode::kIoError ? 1 : 2;
}

StatusOr<std::vector<int32_t>> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    try {
      size_t used = 0;
      ids.push_back(std::stoi(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      return invalid_argument("--prompt-ids: \"" + item + "\" is not an integer");
    }
  }
  return ids;
}

// generation_config.json beside the model gives what the flags do not:
// its eos_token_id ids join the tokenizer's (unless --ignore-eos), and
// do_sample, temperature, top_k, top_p, repetition_penalty and
// max_new_tokens stand where their flag was not given (--greedy also
// settles do_sample and temperature).
void apply_generation_config(const GenerateFlags& f, const train::GenerationConfig& g,
                             train::GenerateOptions* o) {
  const auto given = [&](const char* flag) { return f.cmd->count(flag) > 0; };
  if (!f.ignore_eos)
    for (uint32_t id : g.eos_ids) add_eos(o, id);
  const bool sampling_given = given("--greedy") || given("--temperature");
  if (g.do_sample && !*g.do_sample && !sampling_given) o->greedy = true;
  if (g.temperature && !sampling_given) o->temperature = *g.temperature;
  if (g.top_k && !given("--top-k")) o->top_k = *g.top_k;
  if (g.top_p && !given("--top-p")) o->top_p = *g.top_p;
  if (g.repetition_penalty && !given("--repetition-penalty"))
    o->repetition_penalty = *g.repetition_penalty;
  if (g.max_new_tokens && !given("--max-new-tokens")) o->max_new_tokens = *g.max_new_tokens;
}

// One prompt's result as --json prints it.
nlohmann::json result_json(const std::vector<int32_t>& prompt, const train::GenerateResult& r,
                           const train::TextCodec& codec) {
  return {{"prompt", prompt},
          {"tokens", r.tokens},
          {"text", codec.decode(r.tokens, true)},
          {"prompt_seconds", r.prompt_seconds},
          {"token_seconds", r.token_seconds},
          {"stopped_at_eos", r.stopped_at_eos},
          {"stopped_at_stop_string", r.stopped_by_stop_after}};
}

// Several prompts in one batch: each one's result as a JSON line (--json)
// or as its text, in the order given.
int run_generate_batch(const GenerateFlags& f, train::InferenceModel& m,
                       const train::TextCodec& codec,
                       const std::vector<std::vector<int32_t>>& prompts,
                       const train::GenerateOptions& o, int64_t max_seq, DType dtype) {
  auto dec = m.module->make_decoder(static_cast<int64_t>(prompts.size()), max_seq, dtype);
  if (!dec.ok()) return generate_fail(dec.status());
  auto r = train::generate_batch(**dec, prompts, o);
  if (!r.ok()) return generate_fail(r.status());
  size_t tokens = 0;
  double seconds = (*r)[0].prompt_seconds;
  for (size_t b = 0; b < prompts.size(); ++b) {
    const train::GenerateResult& g = (*r)[b];
    tokens += g.tokens.size();
    if (f.json) {
      std::cout << result_json(prompts[b], g, codec).dump() << "\n";
    } else {
      std::vector<int32_t> all = f.chat ? std::vector<int32_t>{} : prompts[b];
      all.insert(all.end(), g.tokens.begin(), g.tokens.end());
      std::cout << codec.decode(all, true) << "\n";
    }
  }
  // The batch's steps are the longest row's token_seconds.
  const auto longest = std::max_element(
      r->begin(), r->end(), [](const train::GenerateResult& a, const train::GenerateResult& b) {
        return a.token_seconds.size() < b.token_seconds.size();
      });
  for (double s : longest->token_seconds) seconds += s;
  if (!f.json)
    std::cerr << "zerotrain generate: " << prompts.size() << " prompts, " << tokens << " tokens in "
              << seconds << " s (" << static_cast<double>(tokens) / seconds << " tokens/s)\n";
  return 0;
}

int run_generate(const GenerateFlags& f) {
  if (f.prompts.empty() == f.prompt_ids.empty()) {
    return generate_fail(invalid_argument(
        "give --prompt or --prompt-ids (either may be repeated for a batch), not both"));
  }
  if (!f.chat && (f.cmd->count("--system") > 0 || f.cmd->count("--chat-format") > 0))
    return generate_fail(invalid_argument("--system and --chat-format need --chat"));
  if (f.chat && f.prompts.empty())
    return generate_fail(invalid_argument("--chat takes --prompt text (the user's turn)"));
  const StatusOr<DType> dtype = parse_dtype(f.dtype);
  if (!dtype.ok()) return generate_fail(dtype.status().with_context("--dtype"));
  if (*dtype != DType::kFloat32 && *dtype != DType::kBFloat16)
    return generate_fail(
        invalid_argument("--dtype " + f.dtype + ": generation runs in fp32 or bf16"));
  auto q = quant4_options(f.cmd, f.quant4);
  if (!q.ok()) return generate_fail(q.status());
  auto m = train::load_inference_model(f.model, 1, 1, f.adapter, *q);
  if (!m.ok()) return generate_fail(m.status());
  auto info = m->spec.family->info(m->spec.config);
  if (!info.ok()) return generate_fail(info.status());
  auto codec = train::TextCodec::resolve(f.tokenizer, m->source_dir, info->vocab_size);
  if (!codec.ok()) return generate_fail(codec.status());
  std::vector<std::vector<int32_t>> prompts;
  for (const std::string& ids : f.prompt_ids) {
    StatusOr<std::vector<int32_t>> p = parse_ids(ids);
    if (!p.ok()) return generate_fail(p.status());
    prompts.push_back(std::move(*p));
  }
  train::GenerateOptions o{.max_new_tokens = f.max_new_tokens,
                           .greedy = f.greedy,
                           .temperature = f.temperature,
                           .top_k = f.top_k,
                           .top_p = f.top_p,
                           .seed = f.seed,
                           .repetition_penalty = f.repetition_penalty};
  if (!f.ignore_eos)
    if (auto e = codec->eos()) o.eos.push_back(*e);
  if (f.chat) {
    if (Status s = chat_prompts(f, *codec, &prompts, &o); !s.ok()) return generate_fail(s);
  }
  for (size_t i = 0; !f.chat && i < f.prompts.size(); ++i) {
    StatusOr<std::vector<int32_t>> p = codec->encode(f.prompts[i], !f.no_special);
    if (!p.ok()) return generate_fail(p.status());
    prompts.push_back(std::move(*p));
  }
  const std::vector<int32_t>* prompt = &prompts.front();
  for (const auto& p : prompts)
    if (p.size() > prompt->size()) prompt = &p;  // the longest sets the positions
  auto gen_config = train::read_generation_config(m->source_dir);
  if (!gen_config.ok()) return generate_fail(gen_config.status());
  apply_generation_config(f, *gen_config, &o);
  // Positions: the prompt and the new tokens, unless --max-seq says more.
  const int64_t need = static_cast<int64_t>(prompt->size()) + o.max_new_tokens;
  const int64_t max_seq = f.max_seq > 0 ? f.max_seq : std::min(need, info->max_seq);
  if (need > max_seq) {
    return generate_fail(invalid_argument(
        "a prompt of " + std::to_string(prompt->size()) + " tokens and " +
        std::to_string(o.max_new_tokens) + " new ones need " + std::to_string(need) +
        " positions; the model has " + std::to_string(info->max_seq) +
        (f.max_seq > 0 ? " and --max-seq gives " + std::to_string(f.max_seq) : "")));
  }
  // Stop strings (vLLM's `stop`): a row stops once its new text contains
  // one; the text keeps what that token completed.
  if (!f.stops.empty()) {
    o.stop_after = [&f, &codec](std::span<const int32_t> tokens) {
      const std::string text =
          codec->decode(std::vector<int32_t>(tokens.begin(), tokens.end()), true);
      for (const std::string& s : f.stops)
        if (!s.empty() && text.find(s) != std::string::npos) return true;
      return false;
    };
  }
  if (!f.json) {
    std::cerr << "zerotrain generate: " << m->description << ", " << codec->name() << "\n";
    if (!gen_config->path.empty())
      std::cerr << "zerotrain generate: defaults from " << gen_config->path << "\n";
  }
  if (prompts.size() > 1) return run_generate_batch(f, *m, *codec, prompts, o, max_seq, *dtype);
  prompt = &prompts.front();
  auto dec = m->module->make_decoder(1, max_seq, *dtype);
  if (!dec.ok()) return generate_fail(dec.status());

  // Streaming: print what decode(prompt + new) adds beyond decode(prompt),
  // holding back a character whose bytes have not all come.
  std::vector<int32_t> all = *prompt;
  const std::string head = codec->decode(all, true);
  size_t printed = 0;
  const auto on_token = [&](int32_t id) {
    if (f.json) return;
    all.push_back(id);
    const std::string text = codec->decode(all, true);
    std::string_view fresh = std::string_view(text).substr(std::min(text.size(), head.size()));
    if (fresh.ends_with("\xEF\xBF\xBD")) return;  // an unfinished character
    if (fresh.size() > printed) {
      std::cout << fresh.substr(printed) << std::flush;
      printed = fresh.size();
    }
  };
  // The prompt's text first, as typed; a chat prints the reply alone.
  if (!f.json && !f.prompts.empty() && !f.chat) std::cout << f.prompts.front() << std::flush;
  auto r = train::generate(**dec, *prompt, o, on_token);
  if (!r.ok()) return generate_fail(r.status());
  if (f.json) {
    std::cout << result_json(*prompt, *r, *codec).dump() << "\n";
    return 0;
  }
  const std::string text = codec->decode(all, true);
  const std::string_view fresh = std::string_view(text).substr(std::min(text.size(), head.size()));
  if (fresh.size() > printed) std::cout << fresh.substr(printed);
  std::cout << "\n";
  double total = 0;
  for (double s : r->token_seconds) total += s;
  std::cerr << "zerotrain generate: " << r->tokens.size() << " tokens"
            << (r->stopped_at_eos ? " (stopped at end-of-sequence)" : "")
            << (r->stopped_by_stop_after ? " (stopped at a --stop string)" : "") << ", "
            << (r->tokens.size() > 1 ? 1e3 * total / static_cast<double>(r->tokens.size() - 1)
                                     : 0.0)
            << " ms/token after a " << 1e3 * r->prompt_seconds << " ms prompt\n";
  return 0;
}

}  // namespace

Runner add_generate_command(CLI::App& app) {
  auto f = std::make_shared<GenerateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "generate", "generate text from a checkpoint, an HF model directory or a safetensors file");
  cmd->add_option("--adapter", f->adapter,
                  "a PEFT LoRA adapter directory, merged into --model's weights at load");
  cmd->add_option("--model", f->model,
                  "checkpoint directory (or tag), HF model directory, or .safetensors file")
      ->required();
  cmd->add_option("--tokenizer", f->tokenizer,
                  "tokenizer.json (or its directory), or \"bytes\" (default: the one beside the "
                  "model; bytes for a byte vocabulary)");
  cmd->add_option("--prompt", f->prompts,
                  "prompt text; repeat it to generate for several prompts as one batch")
      ->allow_extra_args(false);
  cmd->add_option("--prompt-ids", f->prompt_ids,
                  "prompt as comma-separated token ids; repeatable as --prompt")
      ->allow_extra_args(false);
  cmd->add_option("--max-new-tokens", f->max_new_tokens, "tokens to generate")
      ->capture_default_str();
  cmd->add_flag("--greedy", f->greedy, "always the most likely token (as --temperature 0)");
  cmd->add_option("--temperature", f->temperature, "sampling temperature")->capture_default_str();
  cmd->add_option("--top-k", f->top_k, "sample among the k most likely (0: all)")
      ->capture_default_str();
  cmd->add_option("--top-p", f->top_p, "sample among the most likely up to this mass")
      ->capture_default_str();
  cmd->add_option("--seed", f->seed, "sampling seed")->capture_default_str();
  cmd->add_option("--repetition-penalty", f->repetition_penalty,
                  "HF's repetition_penalty over the prompt and the new tokens (1: off)")
      ->capture_default_str();
  cmd->add_option("--max-seq", f->max_seq, "positions the KV cache holds (default: just enough)");
  cmd->add_option("--dtype", f->dtype,
                  "fp32, or bf16: bf16 weights (a copy; the fp32 ones stay loaded) and KV cache, "
                  "fp32 residual stream and logits, as autocast")
      ->capture_default_str();
  cmd->add_flag("--ignore-eos", f->ignore_eos,
                "do not stop at the end-of-sequence tokens (the tokenizer's and "
                "generation_config.json's eos_token_id)");
  cmd->add_option("--stop", f->stops,
                  "stop a prompt's generation once its new text contains this string "
                  "(repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--no-special", f->no_special, "no special tokens (e.g. <s>) before the prompt");
  cmd->add_flag("--chat", f->chat,
                "each --prompt is a user turn in the tokenizer's chat format, with the "
                "assistant's header after it (apply_chat_template's add_generation_prompt); "
                "prints the reply alone");
  cmd->add_option("--system", f->system, "with --chat: a system message before each prompt");
  cmd->add_option("--chat-format", f->chat_format,
                  "with --chat: auto (by the tokenizer's special tokens), chatml, llama3, llama2 "
                  "or plain, as `data tokenize --chat-format`")
      ->capture_default_str();
  cmd->add_flag("--json", f->json, "print {prompt, tokens, text, timings} as JSON");
  add_quant4_flags(cmd, f->quant4);
  f->cmd = cmd;
  return [f]() { return run_generate(*f); };
}

}  // namespace zerotrain::cli
