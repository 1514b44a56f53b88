#include "text/normalizer.h"

#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <cctype>

#include "text/json_fields.h"

namespace zerotrain::text {

using json_fields::Json;

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  for (size_t hit; (hit = text.find(from, pos)) != std::string_view::npos;
       pos = hit + from.size()) {
    out.append(text.substr(pos, hit - pos));
    out.append(to);
  }
  out.append(text.substr(pos));
  return out;
}

namespace {

StatusOr<std::string> icu_transform(const std::string& text, bool lowercase,
                                    const UNormalizer2* form) {
  UErrorCode err = U_ZERO_ERROR;
  int32_t n16 = 0;
  u_strFromUTF8(nullptr, 0, &n16, text.data(), static_cast<int32_t>(text.size()), &err);
  err = U_ZERO_ERROR;
  std::u16string in(static_cast<size_t>(n16), u'\0');
  u_strFromUTF8(in.data(), n16, nullptr, text.data(), static_cast<int32_t>(text.size()), &err);
  std::u16string out(in.size() * 4 + 16, u'\0');  // NFKC expands by at most 18x; retry below
  int32_t got = 0;
  for (int attempt = 0; attempt < 2; ++attempt) {
    err = U_ZERO_ERROR;
    got = lowercase
              ? u_strToLower(out.data(), static_cast<int32_t>(out.size()), in.data(), n16, "", &err)
              : unorm2_normalize(form, in.data(), n16, out.data(), static_cast<int32_t>(out.size()),
                                 &err);
    if (err != U_BUFFER_OVERFLOW_ERROR) break;
    out.assign(static_cast<size_t>(got) + 1, u'\0');
  }
  if (U_FAILURE(err)) {
    return invalid_argument(std::string("Unicode normalization failed: ") + u_errorName(err));
  }
  err = U_ZERO_ERROR;
  int32_t n8 = 0;
  u_strToUTF8(nullptr, 0, &n8, out.data(), got, &err);
  err = U_ZERO_ERROR;
  std::string result(static_cast<size_t>(n8), '\0');
  u_strToUTF8(result.data(), n8, nullptr, out.data(), got, &err);
  return result;
}

bool is_space_byte(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

}  // namespace

Status Normalizer::add(const Json& j, const std::string& where, std::vector<Step>& out) {
  ZT_ASSIGN_OR_RETURN(std::string type, json_fields::type_of(j, where));
  if (type == "Sequence") {
    const auto it = j.find("normalizers");
    if (it == j.end() || !it->is_array()) {
      return json_fields::wrong_type(where + ".normalizers", "an array");
    }
    for (size_t i = 0; i < it->size(); ++i) {
      ZT_RETURN_IF_ERROR(add((*it)[i], where + ".normalizers[" + std::to_string(i) + "]", out));
    }
  } else if (type == "Prepend") {
    ZT_ASSIGN_OR_RETURN(std::string prefix, json_fields::string_at(j, "prepend", where));
    out.push_back(Prepend{prefix});
  } else if (type == "Replace") {
    Replace r;
    ZT_ASSIGN_OR_RETURN(r.content, json_fields::string_at(j, "content", where));
    const auto p = j.find("pattern");
    if (p != j.end() && p->contains("String") && (*p)["String"].is_string()) {
      r.literal = (*p)["String"].get<std::string>();
      if (r.literal.empty()) return invalid_argument(where + ".pattern.String: empty");
    } else if (p != j.end() && p->contains("Regex") && (*p)["Regex"].is_string()) {
      ZT_ASSIGN_OR_RETURN(Regex re, Regex::compile((*p)["Regex"].get<std::string>()));
      r.regex = std::move(re);
    } else {
      return json_fields::wrong_type(where + ".pattern", "{\"String\": ...} or {\"Regex\": ...}");
    }
    out.push_back(std::move(r));
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    out.push_back(Unicode{type == "NFC"    ? Form::kNfc
                          : type == "NFD"  ? Form::kNfd
                          : type == "NFKC" ? Form::kNfkc
                                           : Form::kNfkd});
  } else if (type == "Lowercase") {
    out.push_back(Lowercase{});
  } else if (type == "Strip") {
    ZT_ASSIGN_OR_RETURN(bool left, json_fields::bool_or(j, "strip_left", true, where));
    ZT_ASSIGN_OR_RETURN(bool right, json_fields::bool_or(j, "strip_right", true, where));
    out.push_back(Strip{left, right});
  } else {
    return json_fields::unsupported(where, type,
                                    "Sequence, Prepend, Replace, NFC, NFD, NFKC, NFKD, Lowercase, "
                                    "Strip");
  }
  return ok_status();
}

StatusOr<Normalizer> Normalizer::from_json(const Json& j, const std::string& where) {
  Normalizer n;
  if (!j.is_null()) ZT_RETURN_IF_ERROR(add(j, where, n.steps_));
  return n;
}

StatusOr<std::string> Normalizer::apply(std::string text) const {
  for (const Step& step : steps_) {
    if (const auto* p = std::get_if<Prepend>(&step)) {
      if (!text.empty()) text = p->prefix + text;  // HF: never onto empty text
    } else if (const auto* r = std::get_if<Replace>(&step)) {
      if (!r->regex) {
        text = replace_all(text, r->literal, r->content);
        continue;
      }
      std::string out;
      size_t last = 0;
      ZT_RETURN_IF_ERROR(r->regex->for_each_match(text, [&](size_t b, size_t e) {
        out.append(text, last, b - last);
        out += r->content;
        last = e;
      }));
      out.append(text, last);
      text = std::move(out);
    } else if (const auto* u = std::get_if<Unicode>(&step)) {
      UErrorCode err = U_ZERO_ERROR;
      const UNormalizer2* form = u->form == Form::kNfc    ? unorm2_getNFCInstance(&err)
                                 : u->form == Form::kNfd  ? unorm2_getNFDInstance(&err)
                                 : u->form == Form::kNfkc ? unorm2_getNFKCInstance(&err)
                                                          : unorm2_getNFKDInstance(&err);
      if (U_FAILURE(err)) return invalid_argument("ICU normalizer unavailable");
      ZT_ASSIGN_OR_RETURN(text, icu_transform(text, false, form));
    } else if (std::holds_alternative<Lowercase>(step)) {
      ZT_ASSIGN_OR_RETURN(text, icu_transform(text, true, nullptr));
    } else if (const auto* s = std::get_if<Strip>(&step)) {
      size_t b = 0, e = text.size();
      if (s->left)
        while (b < e && is_space_byte(text[b])) ++b;
      if (s->right)
        while (e > b && is_space_byte(text[e - 1])) --e;
      text = text.substr(b, e - b);
    }
  }
  return text;
}

}  // namespace zerotrain::text
