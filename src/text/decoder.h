// HF tokenizers' decoders (tokenizer.json "decoder"): how the tokens of a
// sequence of ids become text again. Supported: Sequence, ByteLevel,
// ByteFallback, Fuse, Strip, Replace (string pattern), Metaspace. Anything
// else is refused at load, by name. Without a decoder, tokens are joined
// with spaces (HF's rule).
//
//   ZT_ASSIGN_OR_RETURN(Decoder d, Decoder::from_json(j["decoder"], "decoder"));
//   std::string text = d.decode({"Hello", "Ġworld"});  // "Hello world"
//
// Thread-safety: immutable after from_json; decode is const and reentrant.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "core/status.h"

namespace zerotrain::text {

class Decoder {
 public:
  static StatusOr<Decoder> from_json(const nlohmann::json& j, const std::string& where);
  static Decoder byte_level();

  std::string decode(std::vector<std::string> tokens) const;

 private:
  struct ByteLevel {};
  struct ByteFallback {};
  struct Fuse {};
  struct Strip {
    std::string content;
    size_t start, stop;
  };
  struct Replace {
    std::string pattern, content;
  };
  struct Metaspace {
    std::string replacement;
    bool strip_first;
  };
  using Step = std::variant<ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace>;
  Status add(const nlohmann::json& j, const std::string& where);

  std::vector<Step> steps_;
  bool present_ = false;
};

}  // namespace zerotrain::text
