#include "text/decoder.h"

#include "text/json_fields.h"
#include "text/normalizer.h"
#include "text/utf8.h"

namespace zerotrain::text {

using json_fields::Json;

namespace {

// "<0x41>" -> 0x41.
std::optional<uint8_t> fallback_byte(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return std::nullopt;
  uint8_t v = 0;
  for (int i = 3; i < 5; ++i) {
    const char c = t[i];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = static_cast<uint8_t>(v * 16 + d);
  }
  return v;
}

std::vector<std::string> byte_level_chain(const std::vector<std::string>& tokens) {
  std::string bytes;
  for (const std::string& t : tokens) {
    std::string mapped;
    bool all = true;
    for (size_t i = 0; i < t.size() && all;) {
      size_t n = utf8_sequence_length(t, i);
      if (n == 0) n = 1;
      const auto b = byte_level_byte(std::string_view(t).substr(i, n));
      if (b) {
        mapped += static_cast<char>(*b);
      } else {
        all = false;
      }
      i += n;
    }
    bytes += all ? mapped : t;  // HF: a token with a non-byte-level char keeps its own bytes
  }
  return {utf8_lossy(bytes)};
}

std::vector<std::string> byte_fallback_chain(const std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  std::string pending;
  size_t pending_count = 0;
  const auto flush = [&]() {
    if (pending_count == 0) return;
    if (is_valid_utf8(pending)) {
      out.push_back(pending);
    } else {  // HF: one U+FFFD per byte token of an invalid run
      for (size_t i = 0; i < pending_count; ++i) out.emplace_back("\xEF\xBF\xBD");
    }
    pending.clear();
    pending_count = 0;
  };
  for (const std::string& t : tokens) {
    if (const auto b = fallback_byte(t)) {
      pending += static_cast<char>(*b);
      ++pending_count;
    } else {
      flush();
      out.push_back(t);
    }
  }
  flush();
  return out;
}

}  // namespace

Status Decoder::add(const Json& j, const std::string& where) {
  ZT_ASSIGN_OR_RETURN(std::string type, json_fields::type_of(j, where));
  if (type == "Sequence") {
    const auto it = j.find("decoders");
    if (it == j.end() || !it->is_array())
      return json_fields::wrong_type(where + ".decoders", "an array");
    for (size_t i = 0; i < it->size(); ++i) {
      ZT_RETURN_IF_ERROR(add((*it)[i], where + ".decoders[" + std::to_string(i) + "]"));
    }
  } else if (type == "ByteLevel") {
    steps_.push_back(ByteLevel{});
  } else if (type == "ByteFallback") {
    steps_.push_back(ByteFallback{});
  } else if (type == "Fuse") {
    steps_.push_back(Fuse{});
  } else if (type == "Strip") {
    Strip s;
    ZT_ASSIGN_OR_RETURN(s.content, json_fields::string_at(j, "content", where));
    if (!j.contains("start") || !j["start"].is_number_unsigned() || !j.contains("stop") ||
        !j["stop"].is_number_unsigned()) {
      return json_fields::wrong_type(where + ".start/stop", "non-negative integers");
    }
    s.start = j["start"].get<size_t>();
    s.stop = j["stop"].get<size_t>();
    steps_.push_back(std::move(s));
  } else if (type == "Replace") {
    Replace r;
    ZT_ASSIGN_OR_RETURN(r.content, json_fields::string_at(j, "content", where));
    const auto p = j.find("pattern");
    if (p == j.end() || !p->contains("String") || !(*p)["String"].is_string() ||
        (*p)["String"].get<std::string>().empty()) {
      return json_fields::wrong_type(where + ".pattern",
                                     "{\"String\": ...} (a regex pattern is "
                                     "not supported in a decoder)");
    }
    r.pattern = (*p)["String"].get<std::string>();
    steps_.push_back(std::move(r));
  } else if (type == "Metaspace") {
    Metaspace m;
    ZT_ASSIGN_OR_RETURN(m.replacement, json_fields::string_at(j, "replacement", where));
    const auto scheme = j.find("prepend_scheme");
    if (scheme != j.end() && scheme->is_string()) {
      m.strip_first = scheme->get<std::string>() != "never";
    } else {
      ZT_ASSIGN_OR_RETURN(m.strip_first, json_fields::bool_or(j, "add_prefix_space", true, where));
    }
    steps_.push_back(std::move(m));
  } else {
    return json_fields::unsupported(where, type,
                                    "Sequence, ByteLevel, ByteFallback, Fuse, Strip, Replace, "
                                    "Metaspace");
  }
  return ok_status();
}

StatusOr<Decoder> Decoder::from_json(const Json& j, const std::string& where) {
  Decoder d;
  if (!j.is_null()) {
    ZT_RETURN_IF_ERROR(d.add(j, where));
    d.present_ = true;
  }
  return d;
}

Decoder Decoder::byte_level() {
  Decoder d;
  d.steps_.push_back(ByteLevel{});
  d.present_ = true;
  return d;
}

std::string Decoder::decode(std::vector<std::string> tokens) const {
  if (!present_) {
    std::string joined;
    for (size_t i = 0; i < tokens.size(); ++i) joined += (i ? " " : "") + tokens[i];
    return joined;
  }
  for (const Step& step : steps_) {
    if (std::holds_alternative<ByteLevel>(step)) {
      tokens = byte_level_chain(tokens);
    } else if (std::holds_alternative<ByteFallback>(step)) {
      tokens = byte_fallback_chain(tokens);
    } else if (std::holds_alternative<Fuse>(step)) {
      std::string all;
      for (const std::string& t : tokens) all += t;
      tokens.assign(1, std::move(all));
    } else if (const auto* s = std::get_if<Strip>(&step)) {
      for (std::string& t : tokens) {
        size_t b = 0, e = t.size();
        for (size_t k = 0; k < s->start && t.compare(b, s->content.size(), s->content) == 0; ++k) {
          b += s->content.size();
        }
        for (size_t k = 0; k < s->stop && e >= b + s->content.size() &&
                           t.compare(e - s->content.size(), s->content.size(), s->content) == 0;
             ++k) {
          e -= s->content.size();
        }
        t = t.substr(b, e - b);
      }
    } else if (const auto* r = std::get_if<Replace>(&step)) {
      for (std::string& t : tokens) t = replace_all(t, r->pattern, r->content);
    } else if (const auto* m = std::get_if<Metaspace>(&step)) {
      for (size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = replace_all(tokens[i], m->replacement, " ");
        if (i == 0 && m->strip_first && !tokens[i].empty() && tokens[i][0] == ' ') {
          tokens[i].erase(0, 1);
        }
      }
    }
  }
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

}  // namespace zerotrain::text
