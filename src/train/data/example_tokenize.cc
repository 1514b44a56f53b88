#include "train/data/example_tokenize.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/file_read.h"

namespace zerotrain::train {

using Json = nlohmann::json;

namespace {

constexpr size_t kTextChunkBytes = 1 << 20;

// Where `text` may be cut so that both sides encode as the whole does with
// a byte-level tokenizer: after a newline, before a non-space (no
// pre-tokenizer pattern of GPT-2, Llama 3 or Qwen2 matches across it).
size_t chunk_end(const std::string& text, size_t begin) {
  if (text.size() - begin <= kTextChunkBytes) return text.size();
  for (size_t i = begin + kTextChunkBytes; i + 1 < text.size(); ++i) {
    if (text[i] == '\n' && !std::isspace(static_cast<unsigned char>(text[i + 1]))) return i + 1;
  }
  return text.size();
}

struct Examples {
  std::vector<EncodedExample> list;
  bool masked = false;  // some example trains on part of its tokens
};

StatusOr<EncodedExample> encode_record(text::Tokenizer& tok, const Json& r,
                                       const ExampleTokenizeOptions& o, ChatFormat format,
                                       bool* masked) {
  const std::string eos = o.append_eos ? eos_text(tok) : "";
  if (r.contains("messages")) {
    ZT_ASSIGN_OR_RETURN(std::vector<TextPart> parts,
                        render_chat(format, r["messages"], bos_text(tok), eos_text(tok)));
    *masked = true;
    return encode_parts(tok, parts, /*add_special_tokens=*/false);
  }
  if (r.contains("prompt") || r.contains("completion")) {
    if (!r.contains("prompt") || !r["prompt"].is_string() || !r.contains("completion") ||
        !r["completion"].is_string()) {
      return invalid_argument("a prompt/completion record needs both as strings");
    }
    *masked = true;
    return encode_parts(
        tok,
        {{r["prompt"].get<std::string>(), false}, {r["completion"].get<std::string>() + eos, true}},
        /*add_special_tokens=*/true);
  }
  if (r.contains(o.text_field) && r[o.text_field].is_string()) {
    return encode_parts(tok, {{r[o.text_field].get<std::string>() + eos, true}}, true);
  }
  std::string keys;
  for (const auto& [k, v] : r.items()) keys += (keys.empty() ? "" : ", ") + k;
  return invalid_argument("a record needs \"" + o.text_field +
                          "\" (a string), \"messages\", or \"prompt\" and \"completion\"; this "
                          "one has: " +
                          (keys.empty() ? "no keys" : keys));
}

StatusOr<Examples> read_jsonl(const std::string& path, text::Tokenizer& tok,
                              const ExampleTokenizeOptions& o, ChatFormat format) {
  std::ifstream in(path);
  if (!in) return io_error("tokenize: cannot open " + path);
  Examples ex;
  std::string line;
  for (uint64_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = "tokenize: " + path + " line " + std::to_string(n) + ": ";
    const Json r = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (r.is_discarded() || !r.is_object()) return invalid_argument(where + "not a JSON object");
    bool masked = false;
    auto e = encode_record(tok, r, o, format, &masked);
    if (!e.ok()) return invalid_argument(where + e.status().message());
    ex.masked = ex.masked || masked;
    ex.list.push_back(std::move(e).value());
  }
  if (in.bad()) return io_error("tokenize: reading " + path + " failed");
  if (ex.list.empty()) return invalid_argument("tokenize: " + path + " holds no records");
  return ex;
}

// Appends examples [begin, end) to `out` in blocks of seq_len: one example
// a block, or (pack) as many whole examples as fit, each marked where it
// begins so that it attends only to itself. Without seq_len, one after
// another (a stream). An example longer than a block is cut to it.
void lay_out(const std::vector<EncodedExample>& list, size_t begin, size_t end,
             const ExampleTokenizeOptions& o, bool mask, uint32_t pad, SplitTokens& out,
             TokenizeSummary& s) {
  const auto block = static_cast<size_t>(std::max<int64_t>(o.seq_len, 0));
  size_t used = 0;  // tokens of the current block
  const auto pad_to_block_end = [&]() {
    for (size_t k = used; block > 0 && used > 0 && k < block; ++k) {
      out.tokens.push_back(pad);
      out.trained.push_back(0);
      if (o.pack) out.doc_starts.push_back(k == used ? 1 : 0);  // the padding is its own
    }
    used = 0;
  };
  for (size_t i = begin; i < end; ++i) {
    const EncodedExample& e = list[i];
    size_t n = e.ids.size();
    if (n == 0) continue;  // e.g. an empty text with --no-eos
    if (block > 0 && n > block) {
      n = block;
      ++s.truncated;
    }
    if (!o.pack || used + n > block) pad_to_block_end();
    out.tokens.insert(out.tokens.end(), e.ids.begin(), e.ids.begin() + n);
    if (mask) {
      const size_t at = out.trained.size();
      out.trained.insert(out.trained.end(), e.trained.begin(), e.trained.begin() + n);
      // An example's first token is only ever the target of what precedes
      // it: another example's, never trained.
      if (block > 0) out.trained[at] = 0;
    }
    if (o.pack) {
      out.doc_starts.push_back(1);
      out.doc_starts.insert(out.doc_starts.end(), n - 1, 0);
    }
    used += n;
    if (used == block) used = 0;
  }
  pad_to_block_end();
  if (block > 0 && !out.tokens.empty()) {  // the last block's last target
    out.tokens.push_back(pad);
    out.trained.push_back(0);
    if (o.pack) out.doc_starts.push_back(1);
  }
}

}  // namespace

StatusOr<EncodedExample> encode_parts(text::Tokenizer& tok, const std::vector<TextPart>& parts,
                                      bool add_special_tokens) {
  std::string all;
  for (const TextPart& p : parts) all += p.text;
  EncodedExample e;
  ZT_ASSIGN_OR_RETURN(e.ids, tok.encode(all, add_special_tokens));
  e.trained.assign(e.ids.size(), 0);
  std::string prefix;
  size_t from = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    size_t to = e.ids.size();
    if (i + 1 < parts.size()) {
      prefix += parts[i].text;
      ZT_ASSIGN_OR_RETURN(std::vector<uint32_t> pre, tok.encode(prefix, add_special_tokens));
      to = std::mismatch(pre.begin(), pre.end(), e.ids.begin(), e.ids.end()).second - e.ids.begin();
      to = std::max(to, from);
    }
    if (parts[i].trained) std::fill(e.trained.begin() + from, e.trained.begin() + to, 1);
    from = to;
  }
  return e;
}

Status tokenize_examples(const std::string& input_path, const std::string& output_dir,
                         text::Tokenizer& tok, const ExampleTokenizeOptions& o,
                         TokenizeSummary* summary) {
  TokenizeSummary local;
  TokenizeSummary& s = summary != nullptr ? *summary : local;
  s = TokenizeSummary{};
  if (!std::filesystem::exists(input_path)) {
    return not_found("tokenize: input " + input_path + " does not exist");
  }
  if (!(o.val_fraction >= 0.0 && o.val_fraction < 1.0)) {
    return invalid_argument("tokenize: val_fraction " + std::to_string(o.val_fraction) +
                            " is outside [0, 1)");
  }
  if (o.pack && o.seq_len <= 0) {
    return invalid_argument(
        "tokenize: --pack needs --seq-len T, the block examples are packed "
        "into");
  }
  if (!o.jsonl) {
    if (o.seq_len > 0) {
      return invalid_argument(
          "tokenize: --seq-len needs JSON Lines examples; plain text is one "
          "stream");
    }
    ZT_ASSIGN_OR_RETURN(std::string text, read_text_file(input_path));
    if (text.empty()) return invalid_argument("tokenize: input " + input_path + " is empty");
    std::vector<uint32_t> ids;
    for (size_t b = 0; b < text.size();) {
      const size_t e = chunk_end(text, b);
      auto chunk = tok.encode(std::string_view(text).substr(b, e - b), b == 0);
      if (!chunk.ok()) return chunk.status().with_context("tokenize: " + input_path);
      ids.insert(ids.end(), chunk->begin(), chunk->end());
      b = e;
    }
    if (o.append_eos && tok.eos_id()) ids.push_back(*tok.eos_id());
    const uint64_t val = val_token_count(ids.size(), o.val_fraction);
    SplitTokens train{{ids.begin(), ids.end() - static_cast<int64_t>(val)}, {}};
    SplitTokens held{{ids.end() - static_cast<int64_t>(val), ids.end()}, {}};
    s.examples = 1;
    s.layout = "stream";
    ZT_RETURN_IF_ERROR(
        write_split_tokens(train, held, tok.vocab_size(), output_dir, o.shard_tokens, 0, &s));
    s.examples = 1;
    s.layout = "stream";
    return ok_status();
  }
  ZT_ASSIGN_OR_RETURN(ChatFormat format, chat_format_for(tok, o.chat_format));
  ZT_ASSIGN_OR_RETURN(Examples ex, read_jsonl(input_path, tok, o, format));
  if (ex.masked && o.seq_len <= 0) {
    return invalid_argument("tokenize: " + input_path +
                            " has chat or prompt/completion records: give --seq-len T (each "
                            "example in its own block of T tokens, as the trainer's --seq-len; "
                            "with --pack, as many as fit)");
  }
  const bool mask = ex.masked || o.seq_len > 0;
  const size_t n = ex.list.size();
  const auto val = static_cast<size_t>(static_cast<double>(n) * o.val_fraction);
  if (val == n) return invalid_argument("tokenize: no examples left for the train split");
  const uint32_t pad = tok.eos_id().value_or(0);
  SplitTokens train, held;
  lay_out(ex.list, 0, n - val, o, mask, pad, train, s);
  lay_out(ex.list, n - val, n, o, mask, pad, held, s);
  const uint64_t truncated = s.truncated;
  const auto block = static_cast<uint32_t>(std::max<int64_t>(o.seq_len, 0));
  ZT_RETURN_IF_ERROR(
      write_split_tokens(train, held, tok.vocab_size(), output_dir, o.shard_tokens, block, &s));
  s.examples = n;
  s.truncated = truncated;
  s.trained_tokens =
      mask ? std::count(train.trained.begin(), train.trained.end(), 1) : train.tokens.size();
  s.layout =
      std::string(block == 0 ? "stream"
                  : o.pack   ? "packed into blocks of " + std::to_string(block)
                             : "blocks of " + std::to_string(block)) +
      (mask ? ", loss-masked (chat format " + std::string(chat_format_name(format)) + ")" : "");
  return ok_status();
}

}  // namespace zerotrain::train
