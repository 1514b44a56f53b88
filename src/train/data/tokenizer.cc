// Byte tokenizer and text-file → shard conversion.
#include "train/data/tokenizer.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "train/data/shard.h"

namespace zerotrain::train {

std::vector<uint32_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<uint32_t> out;
  out.reserve(text.size() + 1);
  encode_document(text, &out);
  if (end_of_text_) out.pop_back();
  return out;
}

void ByteTokenizer::encode_document(std::string_view text, std::vector<uint32_t>* out) const {
  for (char c : text) out->push_back(static_cast<unsigned char>(c));
  if (end_of_text_) out->push_back(kEndOfTextToken);
}

StatusOr<std::string> ByteTokenizer::decode(std::span<const uint32_t> tokens) const {
  std::string text;
  text.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const uint32_t id = tokens[i];
    if (id < kByteVocabSize) {
      text.push_back(static_cast<char>(static_cast<unsigned char>(id)));
    } else if (!(end_of_text_ && id == kEndOfTextToken)) {
      return invalid_argument("byte tokenizer: token " + std::to_string(id) + " at index " +
                              std::to_string(i) + " is outside the vocabulary of " +
                              std::to_string(vocab_size()));
    }
  }
  return text;
}

uint64_t val_token_count(uint64_t token_count, double val_fraction) {
  return static_cast<uint64_t>(std::floor(static_cast<double>(token_count) * val_fraction));
}

namespace {

std::string shard_name(const std::string& dir, const char* split, uint64_t index) {
  char name[32];
  std::snprintf(name, sizeof(name), "%s_%06llu.bin", split, static_cast<unsigned long long>(index));
  return (std::filesystem::path(dir) / name).string();
}

// Refuses a directory that already holds shards of either split.
Status check_output_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return io_error("create directory " + dir + ": " + ec.message());
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if ((name.starts_with("train_") || name.starts_with("val_")) && name.ends_with(".bin")) {
      return invalid_argument("output directory " + dir + " already holds token shards (" + name +
                              "); remove them or choose another directory");
    }
  }
  if (ec) return io_error("list directory " + dir + ": " + ec.message());
  return ok_status();
}

Status write_split(std::span<const uint32_t> tokens, uint32_t vocab, const std::string& dir,
                   const char* split, uint64_t shard_tokens, TokenizeSummary* summary,
                   std::span<const uint8_t> trained = {}, uint32_t block_tokens = 0,
                   std::span<const uint8_t> doc_starts = {}) {
  for (uint64_t i = 0, begin = 0; begin < tokens.size(); ++i, begin += shard_tokens) {
    const uint64_t n = std::min<uint64_t>(shard_tokens, tokens.size() - begin);
    const std::string path = shard_name(dir, split, i);
    const ShardExtras extras{
        .trained = trained.empty() ? trained : trained.subspan(begin, n),
        .doc_starts = doc_starts.empty() ? doc_starts : doc_starts.subspan(begin, n),
        .block_tokens = block_tokens};
    ZT_RETURN_IF_ERROR(write_token_shard(path, tokens.subspan(begin, n), vocab, 0, extras));
    summary->files.push_back(path);
  }
  return ok_status();
}

Status check_split_args(uint64_t token_count, uint64_t shard_tokens, double val_fraction) {
  if (shard_tokens == 0) return invalid_argument("tokenize: shard_tokens must be >= 1");
  if (!(val_fraction >= 0.0 && val_fraction < 1.0)) {
    return invalid_argument("tokenize: val_fraction " + std::to_string(val_fraction) +
                            " is outside [0, 1)");
  }
  if (token_count == val_token_count(token_count, val_fraction)) {
    return invalid_argument("tokenize: no tokens left for the train split");
  }
  return ok_status();
}

// Reads `count` bytes from `in` as byte tokens into <split>_%06d.bin shards.
Status stream_split(std::ifstream& in, const std::string& input_path, uint64_t count,
                    const std::string& dir, const char* split, uint64_t shard_tokens,
                    TokenizeSummary* summary) {
  std::string chunk;
  for (uint64_t i = 0, done = 0; done < count; ++i, done += chunk.size()) {
    chunk.resize(std::min(shard_tokens, count - done));
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    if (static_cast<uint64_t>(in.gcount()) != chunk.size()) {
      return io_error("tokenize: " + input_path + " ended early (changed while reading?)");
    }
    const std::string path = shard_name(dir, split, i);
    ZT_RETURN_IF_ERROR(write_token_shard(path, ByteTokenizer().encode(chunk), kByteVocabSize));
    summary->files.push_back(path);
  }
  return ok_status();
}

}  // namespace

Status write_token_splits(std::span<const uint32_t> tokens, uint32_t vocab_size,
                          const std::string& output_dir, uint64_t shard_tokens, double val_fraction,
                          TokenizeSummary* summary) {
  ZT_RETURN_IF_ERROR(check_split_args(tokens.size(), shard_tokens, val_fraction));
  ZT_RETURN_IF_ERROR(check_output_dir(output_dir));
  const uint64_t val = val_token_count(tokens.size(), val_fraction);
  const uint64_t train = tokens.size() - val;
  TokenizeSummary local;
  TokenizeSummary* s = summary != nullptr ? summary : &local;
  *s = TokenizeSummary{train, val, {}};
  ZT_RETURN_IF_ERROR(
      write_split(tokens.first(train), vocab_size, output_dir, "train", shard_tokens, s));
  return write_split(tokens.subspan(train), vocab_size, output_dir, "val", shard_tokens, s);
}

Status write_split_tokens(const SplitTokens& train, const SplitTokens& val, uint32_t vocab_size,
                          const std::string& output_dir, uint64_t shard_tokens,
                          uint32_t block_tokens, TokenizeSummary* summary) {
  if (shard_tokens == 0) return invalid_argument("tokenize: shard_tokens must be >= 1");
  if (train.tokens.empty()) return invalid_argument("tokenize: no tokens for the train split");
  ZT_RETURN_IF_ERROR(check_output_dir(output_dir));
  TokenizeSummary local;
  TokenizeSummary* s = summary != nullptr ? summary : &local;
  s->train_tokens = train.tokens.size();
  s->val_tokens = val.tokens.size();
  s->files.clear();
  ZT_RETURN_IF_ERROR(write_split(train.tokens, vocab_size, output_dir, "train", shard_tokens, s,
                                 train.trained, block_tokens, train.doc_starts));
  return write_split(val.tokens, vocab_size, output_dir, "val", shard_tokens, s, val.trained,
                     block_tokens, val.doc_starts);
}

Status tokenize_text_file(const std::string& input_path, const std::string& output_dir,
                          uint64_t shard_tokens, double val_fraction, TokenizeSummary* summary) {
  std::error_code ec;
  const uint64_t bytes = std::filesystem::file_size(input_path, ec);
  if (ec == std::errc::no_such_file_or_directory) {
    return not_found("tokenize: input " + input_path + " does not exist");
  }
  if (ec) return io_error("tokenize: cannot read " + input_path + ": " + ec.message());
  if (bytes == 0) return invalid_argument("tokenize: input " + input_path + " is empty");
  const std::string context = "while tokenizing " + input_path;
  ZT_RETURN_IF_ERROR(check_split_args(bytes, shard_tokens, val_fraction).with_context(context));
  ZT_RETURN_IF_ERROR(check_output_dir(output_dir).with_context(context));
  std::ifstream in(input_path, std::ios::binary);
  if (!in) return io_error("tokenize: cannot open " + input_path);
  const uint64_t val = val_token_count(bytes, val_fraction);
  TokenizeSummary local;
  TokenizeSummary* s = summary != nullptr ? summary : &local;
  *s = TokenizeSummary{bytes - val, val, {}};
  // One shard in memory at a time, so inputs larger than RAM work.
  ZT_RETURN_IF_ERROR(
      stream_split(in, input_path, bytes - val, output_dir, "train", shard_tokens, s));
  return stream_split(in, input_path, val, output_dir, "val", shard_tokens, s);
}

}  // namespace zerotrain::train
