#include "text/pre_tokenizer.h"

#include <algorithm>
#include <utility>

#include "text/json_fields.h"
#include "text/normalizer.h"

namespace zerotrain::text {

using json_fields::Json;

namespace {

struct Span {
  size_t begin, end;
  bool is_match;
};

// HF's SplitDelimiterBehavior over (span, is_match) in text order.
template <typename B>
std::vector<Span> apply_behavior(const std::vector<Span>& spans, B behavior) {
  std::vector<Span> out;
  bool previous_match = false;
  switch (behavior) {
    case B::kIsolated:
      return spans;
    case B::kRemoved:
      for (const Span& s : spans) {
        if (!s.is_match) out.push_back(s);
      }
      return out;
    case B::kMergedWithPrevious:
      for (const Span& s : spans) {
        if (s.is_match && !previous_match && !out.empty()) {
          out.back().end = s.end;
        } else {
          out.push_back({s.begin, s.end, false});
        }
        previous_match = s.is_match;
      }
      return out;
    case B::kMergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !out.empty()) {
          out.back().begin = it->begin;
        } else {
          out.push_back({it->begin, it->end, false});
        }
        previous_match = it->is_match;
      }
      std::reverse(out.begin(), out.end());
      return out;
    case B::kContiguous:
      for (const Span& s : spans) {
        if (s.is_match && previous_match && !out.empty()) {
          out.back().end = s.end;
        } else {
          out.push_back(s);
        }
        previous_match = s.is_match;
      }
      return out;
  }
  return out;
}

// Matches of `regex` (or of `literal`) and the gaps between them.
Status match_spans(const std::optional<Regex>& regex, const std::string& literal,
                   const std::string& text, bool invert, std::vector<Span>& spans) {
  size_t last = 0;
  const auto on_match = [&](size_t b, size_t e) {
    if (b > last) spans.push_back({last, b, invert});
    spans.push_back({b, e, !invert});
    last = e;
  };
  if (regex) {
    ZT_RETURN_IF_ERROR(regex->for_each_match(text, on_match));
  } else {
    for (size_t hit; (hit = text.find(literal, last)) != std::string::npos;) {
      on_match(hit, hit + literal.size());
    }
  }
  if (last < text.size()) spans.push_back({last, text.size(), invert});
  return ok_status();
}

StatusOr<std::optional<Regex>> pattern_of(const Json& j, const std::string& where,
                                          std::string& literal) {
  const auto p = j.find("pattern");
  if (p != j.end() && p->contains("Regex") && (*p)["Regex"].is_string()) {
    ZT_ASSIGN_OR_RETURN(Regex re, Regex::compile((*p)["Regex"].get<std::string>()));
    return std::optional<Regex>(std::move(re));
  }
  if (p != j.end() && p->contains("String") && (*p)["String"].is_string()) {
    literal = (*p)["String"].get<std::string>();
    if (literal.empty()) return invalid_argument(where + ".pattern.String: empty");
    return std::optional<Regex>();
  }
  return json_fields::wrong_type(where + ".pattern", "{\"Regex\": ...} or {\"String\": ...}");
}

}  // namespace

Status PreTokenizer::add(const Json& j, const std::string& where) {
  ZT_ASSIGN_OR_RETURN(std::string type, json_fields::type_of(j, where));
  if (byte_level_) {
    return invalid_argument(where + ": a " + type +
                            " step after ByteLevel is not supported (ByteLevel must be last)");
  }
  if (type == "Sequence") {
    const auto it = j.find("pretokenizers");
    if (it == j.end() || !it->is_array()) {
      return json_fields::wrong_type(where + ".pretokenizers", "an array");
    }
    for (size_t i = 0; i < it->size(); ++i) {
      ZT_RETURN_IF_ERROR(add((*it)[i], where + ".pretokenizers[" + std::to_string(i) + "]"));
    }
  } else if (type == "Split") {
    Split s;
    ZT_ASSIGN_OR_RETURN(s.regex, pattern_of(j, where, s.literal));
    ZT_ASSIGN_OR_RETURN(std::string behavior, json_fields::string_at(j, "behavior", where));
    static const std::pair<const char*, Behavior> kBehaviors[] = {
        {"Isolated", Behavior::kIsolated},
        {"Removed", Behavior::kRemoved},
        {"MergedWithPrevious", Behavior::kMergedWithPrevious},
        {"MergedWithNext", Behavior::kMergedWithNext},
        {"Contiguous", Behavior::kContiguous}};
    const auto* found = std::find_if(std::begin(kBehaviors), std::end(kBehaviors),
                                     [&](const auto& kv) { return behavior == kv.first; });
    if (found == std::end(kBehaviors)) {
      return invalid_argument(where + ".behavior: \"" + behavior +
                              "\" is not one of Isolated, Removed, MergedWithPrevious, "
                              "MergedWithNext, Contiguous");
    }
    s.behavior = found->second;
    ZT_ASSIGN_OR_RETURN(s.invert, json_fields::bool_or(j, "invert", false, where));
    steps_.push_back(std::move(s));
  } else if (type == "ByteLevel") {
    ByteLevel b;
    ZT_ASSIGN_OR_RETURN(b.add_prefix_space,
                        json_fields::bool_or(j, "add_prefix_space", true, where));
    ZT_ASSIGN_OR_RETURN(bool use_regex, json_fields::bool_or(j, "use_regex", true, where));
    if (use_regex) {
      ZT_ASSIGN_OR_RETURN(Regex re, Regex::compile(kGpt2Pattern));
      b.regex = std::move(re);
    }
    steps_.push_back(std::move(b));
    byte_level_ = true;
  } else if (type == "Metaspace") {
    Metaspace m;
    ZT_ASSIGN_OR_RETURN(m.replacement, json_fields::string_at(j, "replacement", where));
    ZT_ASSIGN_OR_RETURN(m.split, json_fields::bool_or(j, "split", true, where));
    const auto scheme = j.find("prepend_scheme");
    if (scheme != j.end() && scheme->is_string()) {
      const std::string s = scheme->get<std::string>();
      if (s != "always" && s != "first" && s != "never") {
        return invalid_argument(where + ".prepend_scheme: \"" + s +
                                "\" is not one of always, first, never");
      }
      m.prepend = s == "always"  ? Prepend::kAlways
                  : s == "first" ? Prepend::kFirst
                                 : Prepend::kNever;
    } else {  // tokenizers < 0.14: add_prefix_space
      ZT_ASSIGN_OR_RETURN(bool add_prefix,
                          json_fields::bool_or(j, "add_prefix_space", true, where));
      m.prepend = add_prefix ? Prepend::kAlways : Prepend::kNever;
    }
    steps_.push_back(std::move(m));
  } else if (type == "Digits") {
    ZT_ASSIGN_OR_RETURN(bool individual,
                        json_fields::bool_or(j, "individual_digits", false, where));
    ZT_ASSIGN_OR_RETURN(Regex re, Regex::compile(R"(\p{N})"));
    steps_.push_back(
        Split{std::move(re), "", individual ? Behavior::kIsolated : Behavior::kContiguous, false});
  } else {
    return json_fields::unsupported(where, type, "Sequence, Split, ByteLevel, Metaspace, Digits");
  }
  return ok_status();
}

StatusOr<PreTokenizer> PreTokenizer::from_json(const Json& j, const std::string& where) {
  PreTokenizer p;
  if (!j.is_null()) ZT_RETURN_IF_ERROR(p.add(j, where));
  return p;
}

PreTokenizer PreTokenizer::gpt2_byte_level() {
  PreTokenizer p;
  StatusOr<Regex> re = Regex::compile(kGpt2Pattern);
  ZT_CHECK(re.ok(), "GPT-2 pattern: ", re.status().to_string());
  p.steps_.push_back(ByteLevel{false, std::move(re).value()});
  p.byte_level_ = true;
  return p;
}

Status PreTokenizer::split_one(const Split& s, const std::string& text,
                               std::vector<std::string>& out) {
  std::vector<Span> spans;
  ZT_RETURN_IF_ERROR(match_spans(s.regex, s.literal, text, s.invert, spans));
  for (const Span& sp : apply_behavior(spans, s.behavior)) {
    if (sp.end > sp.begin) out.push_back(text.substr(sp.begin, sp.end - sp.begin));
  }
  return ok_status();
}

Status PreTokenizer::split(std::string text, bool at_start, std::vector<std::string>& out) const {
  std::vector<std::string> words;
  words.push_back(std::move(text));
  std::vector<std::string> next;
  for (const Step& step : steps_) {
    next.clear();
    for (size_t w = 0; w < words.size(); ++w) {
      std::string& word = words[w];
      if (const auto* s = std::get_if<Split>(&step)) {
        ZT_RETURN_IF_ERROR(split_one(*s, word, next));
      } else if (const auto* b = std::get_if<ByteLevel>(&step)) {
        if (b->add_prefix_space && (word.empty() || word[0] != ' ')) word = ' ' + word;
        if (!b->regex) {
          next.push_back(std::move(word));
          continue;
        }
        ZT_RETURN_IF_ERROR(b->regex->for_each_match(word, [&](size_t begin, size_t end) {
          next.push_back(word.substr(begin, end - begin));
        }));
      } else if (const auto* m = std::get_if<Metaspace>(&step)) {
        word = replace_all(word, " ", m->replacement);
        const bool first = at_start && w == 0;
        if ((m->prepend == Prepend::kAlways || (m->prepend == Prepend::kFirst && first)) &&
            word.rfind(m->replacement, 0) != 0) {
          word.insert(0, m->replacement);
        }
        if (!m->split) {
          next.push_back(std::move(word));
          continue;
        }
        ZT_RETURN_IF_ERROR(split_one(
            Split{std::nullopt, m->replacement, Behavior::kMergedWithNext, false}, word, next));
      }
    }
    words.swap(next);
  }
  for (std::string& w : words) {
    if (!w.empty()) out.push_back(std::move(w));
  }
  return ok_status();
}

}  // namespace zerotrain::text
