#include "text/tokenizer.h"

#include <filesystem>

#include "core/file_read.h"
#include "text/json_fields.h"
#include "text/utf8.h"

namespace zerotrain::text {

using json_fields::Json;
namespace fs = std::filesystem;

namespace {

StatusOr<Json> read_json(const std::string& path) {
  ZT_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_argument(path + ": not valid JSON");
  return j;
}

// tokenizer_config.json's "eos_token": "</s>" or {"content": "</s>", ...}.
std::optional<std::string> token_name(const Json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  return std::nullopt;
}

std::string first_existing(const std::string& dir, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (fs::exists(dir + "/" + n)) return dir + "/" + n;
  }
  return "";
}

}  // namespace

Status Tokenizer::set_post_processor(const Json& j, const std::string& where) {
  if (j.is_null()) return ok_status();
  ZT_ASSIGN_OR_RETURN(std::string type, json_fields::type_of(j, where));
  const auto id_of = [&](const std::string& token, const std::string& at) -> StatusOr<uint32_t> {
    if (auto id = token_to_id(token)) return *id;
    return invalid_argument(at + ": special token \"" + token + "\" is not in the vocabulary");
  };
  if (type == "ByteLevel") return ok_status();  // offsets only
  if (type == "Sequence") {
    const auto it = j.find("processors");
    if (it == j.end() || !it->is_array())
      return json_fields::wrong_type(where + ".processors", "an array");
    for (size_t i = 0; i < it->size(); ++i) {
      ZT_RETURN_IF_ERROR(
          set_post_processor((*it)[i], where + ".processors[" + std::to_string(i) + "]"));
    }
    return ok_status();
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    for (const char* key : {"cls", "sep"}) {
      if (!j.contains(key) || !j[key].is_array() || j[key].empty() || !j[key][0].is_string()) {
        return json_fields::wrong_type(where + "." + key, "[token, id]");
      }
      ZT_ASSIGN_OR_RETURN(uint32_t id, id_of(j[key][0].get<std::string>(), where + "." + key));
      (std::string(key) == "cls" ? prefix_ : suffix_).push_back(id);
    }
    return ok_status();
  }
  if (type != "TemplateProcessing") {
    return json_fields::unsupported(where, type,
                                    "TemplateProcessing, ByteLevel, RobertaProcessing, "
                                    "BertProcessing, Sequence");
  }
  const auto single = j.find("single");
  if (single == j.end() || !single->is_array())
    return json_fields::wrong_type(where + ".single", "an array");
  bool seen_sequence = false;
  for (size_t i = 0; i < single->size(); ++i) {
    const Json& piece = (*single)[i];
    const std::string at = where + ".single[" + std::to_string(i) + "]";
    if (piece.contains("Sequence")) {
      seen_sequence = true;
      continue;
    }
    if (!piece.contains("SpecialToken") || !piece["SpecialToken"].contains("id")) {
      return json_fields::wrong_type(at, "{\"SpecialToken\": ...} or {\"Sequence\": ...}");
    }
    const std::string name = piece["SpecialToken"]["id"].get<std::string>();
    std::vector<uint32_t> ids;
    const Json* specials = j.contains("special_tokens") ? &j["special_tokens"] : nullptr;
    if (specials != nullptr && specials->contains(name) && (*specials)[name].contains("ids")) {
      for (const Json& id : (*specials)[name]["ids"]) ids.push_back(id.get<uint32_t>());
    } else {
      ZT_ASSIGN_OR_RETURN(uint32_t id, id_of(name, at));
      ids.push_back(id);
    }
    auto& dest = seen_sequence ? suffix_ : prefix_;
    dest.insert(dest.end(), ids.begin(), ids.end());
  }
  return ok_status();
}

void Tokenizer::set_named_tokens(const Json& config) {
  const auto resolve = [&](const char* key, std::initializer_list<const char*> fallbacks) {
    std::optional<uint32_t> id;
    if (auto name = token_name(config, key)) id = token_to_id(*name);
    for (const char* f : fallbacks) {
      if (!id) id = token_to_id(f);
    }
    return id;
  };
  bos_ = resolve("bos_token", {"<s>", "<|begin_of_text|>"});
  eos_ = resolve("eos_token", {"</s>", "<|endoftext|>", "<|end_of_text|>"});
}

StatusOr<Tokenizer> Tokenizer::from_json(const Json& j, const Json& config,
                                         const std::string& where) {
  if (!j.is_object()) return json_fields::wrong_type(where, "a tokenizer.json object");
  Tokenizer t;
  t.source_ = where;
  const auto at = [&](const char* key) { return where + ": " + key; };
  const auto field = [&](const char* key) -> const Json& {
    static const Json null_json;
    const auto it = j.find(key);
    return it == j.end() ? null_json : *it;
  };
  if (!j.contains("model")) return invalid_argument(where + ": no \"model\"");
  ZT_ASSIGN_OR_RETURN(t.model_, BpeModel::from_json(j["model"], at("model")));
  ZT_ASSIGN_OR_RETURN(t.normalizer_, Normalizer::from_json(field("normalizer"), at("normalizer")));
  ZT_ASSIGN_OR_RETURN(t.pre_tokenizer_,
                      PreTokenizer::from_json(field("pre_tokenizer"), at("pre_tokenizer")));
  ZT_ASSIGN_OR_RETURN(t.decoder_, Decoder::from_json(field("decoder"), at("decoder")));
  t.vocab_size_ = t.model_.size();
  const Json& added = field("added_tokens");
  for (size_t i = 0; i < added.size(); ++i) {
    const Json& a = added[i];
    const std::string a_at = at("added_tokens") + "[" + std::to_string(i) + "]";
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_unsigned() ||
        !a.contains("content") || !a["content"].is_string()) {
      return json_fields::wrong_type(a_at, "{\"id\": N, \"content\": \"...\"}");
    }
    AddedToken token{.id = a["id"].get<uint32_t>(), .content = a["content"].get<std::string>()};
    ZT_ASSIGN_OR_RETURN(token.special, json_fields::bool_or(a, "special", false, a_at));
    ZT_ASSIGN_OR_RETURN(token.lstrip, json_fields::bool_or(a, "lstrip", false, a_at));
    ZT_ASSIGN_OR_RETURN(token.rstrip, json_fields::bool_or(a, "rstrip", false, a_at));
    ZT_ASSIGN_OR_RETURN(token.single_word, json_fields::bool_or(a, "single_word", false, a_at));
    t.vocab_size_ = std::max(t.vocab_size_, token.id + 1);
    t.added_.add(std::move(token));
  }
  if (t.pre_tokenizer_.byte_level()) {
    for (int b = 0; b < 256; ++b) {
      if (!t.model_.token_to_id(byte_level_char(static_cast<uint8_t>(b)))) {
        return invalid_argument(at("model.vocab") + ": byte-level pre-tokenizer, but byte " +
                                std::to_string(b) + "'s character is not in the vocabulary");
      }
    }
  }
  ZT_RETURN_IF_ERROR(t.set_post_processor(field("post_processor"), at("post_processor")));
  t.set_named_tokens(config.is_object() ? config : Json::object());
  return t;
}

StatusOr<Tokenizer> Tokenizer::load(const std::string& path) {
  std::error_code ec;
  const bool is_dir = fs::is_directory(path, ec);
  const std::string dir = is_dir ? path : fs::path(path).parent_path().string();
  const std::string config_path = (dir.empty() ? "." : dir) + "/tokenizer_config.json";
  Json config = Json::object();
  if (fs::exists(config_path)) {
    ZT_ASSIGN_OR_RETURN(config, read_json(config_path));
  }
  std::string file = is_dir ? first_existing(path, {"tokenizer.json"}) : path;
  if (!file.empty()) {
    if (!fs::exists(file)) return not_found("tokenizer " + file + " does not exist");
    ZT_ASSIGN_OR_RETURN(Json j, read_json(file));
    return from_json(j, config, file);
  }
  const std::string vocab = first_existing(path, {"vocab.json", "encoder.json"});
  const std::string merges = first_existing(path, {"merges.txt", "vocab.bpe"});
  if (vocab.empty() || merges.empty()) {
    return not_found("no tokenizer in " + path +
                     ": expected tokenizer.json, or vocab.json|encoder.json with "
                     "merges.txt|vocab.bpe");
  }
  ZT_ASSIGN_OR_RETURN(Json vocab_json, read_json(vocab));
  ZT_ASSIGN_OR_RETURN(std::string merges_text, read_text_file(merges));
  Tokenizer t;
  t.source_ = path;
  ZT_ASSIGN_OR_RETURN(t.model_, BpeModel::from_vocab_and_merges(vocab_json, merges_text, vocab));
  t.pre_tokenizer_ = PreTokenizer::gpt2_byte_level();
  t.decoder_ = Decoder::byte_level();
  t.vocab_size_ = t.model_.size();
  if (auto eot = t.model_.token_to_id("<|endoftext|>")) {
    t.added_.add({.id = *eot, .content = "<|endoftext|>", .special = true});
  }
  t.set_named_tokens(config);
  return t;
}

StatusOr<std::vector<uint32_t>> Tokenizer::encode(std::string_view text, bool add_special_tokens) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence_length(text, i);
    if (n == 0) return invalid_argument("text is not UTF-8 at byte " + std::to_string(i));
    i += n;
  }
  std::vector<uint32_t> ids;
  if (add_special_tokens) ids = prefix_;
  std::vector<std::string> words;
  for (const AddedTokens::Segment& seg : added_.split(text)) {
    if (seg.id) {
      ids.push_back(*seg.id);
      continue;
    }
    ZT_ASSIGN_OR_RETURN(std::string normalized, normalizer_.apply(std::string(seg.text)));
    words.clear();
    ZT_RETURN_IF_ERROR(pre_tokenizer_.split(std::move(normalized), seg.offset == 0, words));
    for (const std::string& w : words) model_.encode_word(w, pre_tokenizer_.byte_level(), ids);
  }
  if (add_special_tokens) ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  return ids;
}

std::string Tokenizer::decode(std::span<const uint32_t> ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (uint32_t id : ids) {
    if (const AddedToken* a = added_.find_id(id)) {
      if (!(skip_special && a->special)) tokens.push_back(a->content);
    } else if (id < model_.size() && !model_.id_to_token(id).empty()) {
      tokens.push_back(model_.id_to_token(id));
    }
  }
  return decoder_.decode(std::move(tokens));
}

std::optional<uint32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (const AddedToken* a = added_.find_content(token)) return a->id;
  return model_.token_to_id(token);
}

std::string Tokenizer::id_to_token(uint32_t id) const {
  if (const AddedToken* a = added_.find_id(id)) return a->content;
  return model_.id_to_token(id);
}

bool Tokenizer::is_special(uint32_t id) const {
  const AddedToken* a = added_.find_id(id);
  return a != nullptr && a->special;
}

}  // namespace zerotrain::text
