#include "train/text_codec.h"

#include <filesystem>

#include "text/utf8.h"
#include "train/data/tokenizer.h"

namespace zerotrain::train {

namespace fs = std::filesystem;

StatusOr<TextCodec> TextCodec::resolve(const std::string& flag, const std::string& model_dir,
                                       int64_t vocab_size) {
  TextCodec c;
  std::string path = flag;
  if (path.empty() && !model_dir.empty() &&
      (fs::exists(fs::path(model_dir) / "tokenizer.json") ||
       (fs::exists(fs::path(model_dir) / "vocab.json") &&
        fs::exists(fs::path(model_dir) / "merges.txt")))) {
    path = model_dir;
  }
  if (path == "bytes" || (path.empty() && vocab_size <= kByteVocabSize + 1)) {
    if (vocab_size < kByteVocabSize) {
      return invalid_argument("byte tokens need a vocabulary of 256; the model has " +
                              std::to_string(vocab_size));
    }
    c.name_ = "bytes";
    return c;
  }
  if (path.empty()) {
    return invalid_argument("the model has " + std::to_string(vocab_size) +
                            " tokens and no tokenizer beside it: give --tokenizer (a "
                            "tokenizer.json or a directory holding one)");
  }
  ZT_ASSIGN_OR_RETURN(text::Tokenizer t, text::Tokenizer::load(path));
  if (t.vocab_size() > vocab_size) {
    return invalid_argument("tokenizer " + path + " has " + std::to_string(t.vocab_size()) +
                            " tokens, more than the model's " + std::to_string(vocab_size));
  }
  c.name_ = t.source();
  c.tok_ = std::move(t);
  return c;
}

StatusOr<std::vector<int32_t>> TextCodec::encode(std::string_view text, bool add_special) {
  std::vector<int32_t> out;
  if (!tok_) {
    for (uint32_t id : ByteTokenizer().encode(text)) out.push_back(static_cast<int32_t>(id));
    return out;
  }
  ZT_ASSIGN_OR_RETURN(std::vector<uint32_t> ids, tok_->encode(text, add_special));
  out.assign(ids.begin(), ids.end());
  return out;
}

std::string TextCodec::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::vector<uint32_t> u;
  for (int32_t id : ids) {
    if (id >= 0) u.push_back(static_cast<uint32_t>(id));
  }
  if (!tok_) {
    std::string s;
    for (uint32_t id : u) {
      if (id < kByteVocabSize) s += static_cast<char>(id);
    }
    return text::utf8_lossy(s);
  }
  return tok_->decode(u, skip_special);
}

std::optional<uint32_t> TextCodec::eos() const { return tok_ ? tok_->eos_id() : std::nullopt; }

}  // namespace zerotrain::train
