// The text side of `zerotrain generate` and `zerotrain eval`: the model's
// Hugging Face tokenizer (--tokenizer, or the tokenizer files beside the
// model), or zerotrain's byte tokens for a model with a byte vocabulary
// (the embedded default's).
//
//   ZT_ASSIGN_OR_RETURN(TextCodec codec, TextCodec::resolve("", "models/llama3", 128256));
//   ZT_ASSIGN_OR_RETURN(std::vector<int32_t> ids, codec.encode("Hello", true));
//
// Thread-safety: encode is not safe concurrently (the tokenizer's cache).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "text/tokenizer.h"

namespace zerotrain::train {

class TextCodec {
 public:
  // `flag`: a tokenizer path, "bytes", or "" (the tokenizer in model_dir,
  // else bytes when vocab_size <= 257, else InvalidArgument asking for
  // --tokenizer). InvalidArgument too when the tokenizer's vocabulary is
  // larger than the model's.
  static StatusOr<TextCodec> resolve(const std::string& flag, const std::string& model_dir,
                                     int64_t vocab_size);

  // add_special: the tokenizer's template (e.g. <s>); bytes have none.
  StatusOr<std::vector<int32_t>> encode(std::string_view text, bool add_special);
  std::string decode(std::span<const int32_t> ids, bool skip_special) const;
  std::optional<uint32_t> eos() const;
  const std::string& name() const { return name_; }
  const text::Tokenizer* tokenizer() const { return tok_ ? &*tok_ : nullptr; }

 private:
  std::optional<text::Tokenizer> tok_;  // none: bytes
  std::string name_;
};

}  // namespace zerotrain::train
