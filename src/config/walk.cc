// Schema walk and leaf normalisation (see walk.h).
#include "config/walk.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

#include "config/suggest.h"

namespace zerotrain::config {
namespace {

std::string join(std::string_view prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : std::string(prefix) + "." + std::string(key);
}

// A value as it appears in an error message, kept short.
std::string describe(const Json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

// Sections DeepSpeed validates with pydantic models, whose constructor drops
// every key set to "auto" (so the field's default applies). Elsewhere (top
// level, optimizer/scheduler params) an "auto" reaches DeepSpeed as a string
// and fails, so zerotrain refuses it unless a trainer argument resolves it.
bool in_validated_section(std::string_view path) {
  for (std::string_view s : {"zero_optimization.", "fp16.", "bf16.", "csv_monitor.", "tensorboard.",
                             "comms_logger.", "flops_profiler.", "tensor_parallel."})
    if (path.substr(0, s.size()) == s) return true;
  return false;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// JSON numbers, and strings holding one ("2e8", "500"): DeepSpeed configs
// are often written with quoted numbers, and hjson reads them as text.
bool to_double(const Json& v, double* out) {
  if (v.is_number()) {
    *out = v.get<double>();
    return true;
  }
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  // Decimal only: strtod alone would also take "0x10", "inf" and leading spaces.
  if (s.empty() || s.find_first_not_of("0123456789+-.eE") != std::string::npos) return false;
  errno = 0;
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (*end != '\0' || errno != 0 || !std::isfinite(d)) return false;
  *out = d;
  return true;
}

std::string format_bound(double b) {
  Json j = (b == std::floor(b) && std::fabs(b) < 1e15) ? Json(static_cast<int64_t>(b)) : Json(b);
  return j.dump();
}

bool check_range(const KeySpec& spec, double d, const Json& shown, std::string* error) {
  bool low = spec.min && (spec.min_exclusive ? d <= *spec.min : d < *spec.min);
  bool high = spec.max && d > *spec.max;
  if (!low && !high) return true;
  std::string range;
  if (spec.min) range += std::string(spec.min_exclusive ? "> " : ">= ") + format_bound(*spec.min);
  if (spec.max) range += (range.empty() ? "" : " and ") + ("<= " + format_bound(*spec.max));
  *error = "must be " + range + ", got " + describe(shown);
  return false;
}

std::optional<Json> normalize_int(const KeySpec& spec, const Json& v, std::string* error) {
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) {
    *error = "integer out of range: " + describe(v);
    return std::nullopt;
  }
  int64_t n = 0;
  if (v.is_number_integer()) {
    n = v.get<int64_t>();
  } else {
    double d = 0;
    if (v.is_boolean() || !to_double(v, &d)) {
      *error = "expected an integer, got " + describe(v);
      return std::nullopt;
    }
    if (d != std::floor(d)) {
      *error = "must be an integer, got " + describe(v);
      return std::nullopt;
    }
    if (std::fabs(d) >= 9.2e18) {
      *error = "integer out of range: " + describe(v);
      return std::nullopt;
    }
    n = static_cast<int64_t>(d);
  }
  if (!check_range(spec, static_cast<double>(n), v, error)) return std::nullopt;
  return Json(n);
}

std::optional<Json> normalize_float(const KeySpec& spec, const Json& v, std::string* error) {
  double d = 0;
  if (v.is_boolean() || !to_double(v, &d)) {
    *error = "expected a number, got " + describe(v);
    return std::nullopt;
  }
  if (!check_range(spec, d, v, error)) return std::nullopt;
  return Json(d);
}

std::vector<std::string> split(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    size_t bar = list.find('|');
    out.emplace_back(list.substr(0, bar));
    if (bar == std::string_view::npos) break;
    list.remove_prefix(bar + 1);
  }
  return out;
}

std::optional<Json> normalize_choice(const KeySpec& spec, const Json& v, std::string* error) {
  if (!v.is_string()) {
    *error = "expected a string, got " + describe(v);
    return std::nullopt;
  }
  const std::string text = lower(v.get<std::string>());
  std::vector<std::string> choices;  // the supported ones
  for (const std::string& c : split(spec.choices))
    if (!list_contains(spec.unsupported, c)) choices.push_back(c);
  for (const std::string& c : choices)
    if (lower(c) == text) return Json(c);
  std::string listed;
  for (size_t i = 0; i < choices.size(); ++i) listed += (i ? ", " : "") + choices[i];
  for (const std::string& c : split(spec.unsupported)) {
    if (lower(c) == text) {
      *error = "'" + c +
               "' is a DeepSpeed choice not supported by zerotrain (supported: " + listed + ")";
      return std::nullopt;
    }
  }
  *error = "must be one of " + listed + "; got " + describe(v);
  if (auto m = closest_match(v.get<std::string>(), choices))
    *error += "; did you mean '" + *m + "'?";
  return std::nullopt;
}

std::optional<Json> normalize_pair(const KeySpec& spec, const Json& v, std::string* error) {
  if (!v.is_array() || v.size() != 2) {
    *error = "expected a list of two numbers, got " + describe(v);
    return std::nullopt;
  }
  Json out = Json::array();
  for (const Json& item : v) {
    auto n = normalize_float(spec, item, error);
    if (!n) {
      *error = "in " + describe(v) + ": " + *error;
      return std::nullopt;
    }
    out.push_back(*n);
  }
  return out;
}

// A kUnsupported leaf at its default, or at the other value meaning "off".
bool is_off(const KeySpec& spec, const Json& v) {
  return v == default_value(spec) || (!spec.off_json.empty() && v == Json::parse(spec.off_json));
}

std::string unsupported_tail(const KeySpec& spec) {
  if (!spec.refusal.empty()) return std::string(spec.refusal);
  const std::string d = default_value(spec).dump();
  if (spec.off_json.empty()) return "only its default (" + d + ") is accepted";
  return "only " + d + " (its default) or " + std::string(spec.off_json) + " is accepted";
}

}  // namespace

std::optional<Json> normalize_leaf(const KeySpec& spec, const Json& v, std::string* error) {
  switch (spec.type) {
    case ValueType::kBool:
      if (v.is_boolean()) return v;
      // Quoted booleans are common in hand-written configs; nothing else is.
      if (v == "true" || v == "false") return Json(v == "true");
      *error = "expected a boolean (true or false), got " + describe(v);
      return std::nullopt;
    case ValueType::kInt:
      return normalize_int(spec, v, error);
    case ValueType::kFloat:
      return normalize_float(spec, v, error);
    case ValueType::kString:
      if (!spec.choices.empty()) return normalize_choice(spec, v, error);
      if (v.is_string()) return v;
      *error = "expected a string, got " + describe(v);
      return std::nullopt;
    case ValueType::kFloatPair:
      return normalize_pair(spec, v, error);
    case ValueType::kStringList: {
      if (!v.is_array()) {
        *error = "expected a list of strings, got " + describe(v);
        return std::nullopt;
      }
      Json out = Json::array();
      for (const Json& item : v) {
        if (!spec.choices.empty()) {
          auto c = normalize_choice(spec, item, error);
          if (!c) return std::nullopt;
          out.push_back(*c);
        } else if (item.is_string()) {
          out.push_back(item);
        } else {
          *error = "expected a list of strings, got " + describe(v);
          return std::nullopt;
        }
      }
      return out;
    }
    case ValueType::kSection:
    case ValueType::kOpaque:
      break;
  }
  *error = "internal: not a leaf";
  return std::nullopt;
}

std::string WalkResult::shown(const std::string& canonical) const {
  auto it = leaves.find(canonical);
  if (it != leaves.end()) return it->second.shown;
  auto s = sections.find(canonical);
  return s != sections.end() ? s->second : canonical;
}

namespace {

class Walker {
 public:
  explicit Walker(WalkResult& out) : out_(out) {}

  void object(const Json& obj, const std::string& prefix, const std::string& shown_prefix) {
    for (auto it = obj.begin(); it != obj.end(); ++it)
      key(it.key(), it.value(), prefix, join(shown_prefix, it.key()));
  }

 private:
  void error(const std::string& path, std::string msg) { out_.errors.push_back({path, msg}); }

  void key(const std::string& name, const Json& value, const std::string& prefix,
           const std::string& shown) {
    std::string canon = join(prefix, name);
    const KeySpec* spec = find_key(canon);
    if (spec == nullptr) return unknown_key(prefix, name, shown);
    if (spec->support == Support::kRejected)
      return error(shown, "'" + name + "' " + std::string(spec->help));
    if (!spec->alias_of.empty()) {
      canon = std::string(spec->alias_of);
      if (spec->support == Support::kDeprecated)
        out_.warnings.push_back(
            {shown, "deprecated spelling of '" + canon + "'; write that instead"});
      spec = find_key(canon);
    } else if (spec->support == Support::kDeprecated) {
      out_.warnings.push_back({shown, "deprecated; " + std::string(spec->help)});
    }
    auto [owner, fresh] = claimed_.emplace(canon, shown);
    if (!fresh)
      return error(shown, "'" + owner->second + "' and '" + shown +
                              "' are the same option; give it once, as '" + canon + "'");
    switch (spec->type) {
      case ValueType::kSection:
        return section(*spec, value, canon, shown);
      case ValueType::kOpaque:
        return opaque(*spec, value, shown);
      default:
        return leaf(*spec, value, canon, shown);
    }
  }

  // DeepSpeed never looks up unknown keys at the top level or in the
  // sections it reads with dict.get, so there they are ignored with a
  // warning (`_`-prefixed ones, comments by convention, silently), unless
  // they look like a known key: then they are a typo that would silently
  // lose a setting, and an error. Sections DeepSpeed validates refuse them.
  void unknown_key(const std::string& prefix, const std::string& name, const std::string& shown) {
    static const std::set<std::string> kTolerant = {
        "", "aio", "activation_checkpointing", "checkpoint", "data_types", "timers"};
    if (!kTolerant.count(prefix)) return error(shown, unknown_key_message(prefix, name));
    if (name.starts_with("_")) return;
    if (auto hint = known_key_hint(prefix, name))
      return error(
          shown, "unknown key '" + name + "' " +
                     (prefix.empty() ? std::string("at the top level") : "under " + prefix) + "; " +
                     *hint + " (DeepSpeed would ignore it silently)");
    out_.warnings.push_back(
        {shown, "unknown key '" + name + "', ignored (as DeepSpeed ignores it)"});
  }

  void section(const KeySpec& spec, const Json& value, const std::string& canon,
               const std::string& shown) {
    if (value.is_null() && spec.nullable) return;
    if (!value.is_object()) {
      std::string msg = "expected an object, got " + describe(value);
      out_.bad.insert(canon);
      return error(shown, msg);
    }
    out_.sections[canon] = shown;
    object(value, canon, shown);
  }

  void opaque(const KeySpec& spec, const Json& value, const std::string& shown) {
    if (value.is_null()) return;
    if (spec.support == Support::kInert) return warn_ignored(spec, shown);
    if (!value.is_object()) return error(shown, "expected an object, got " + describe(value));
    const std::string unsupported = not_supported(spec);
    if (spec.gate.empty()) {
      if (!value.empty()) error(shown, unsupported + " (accepted only when empty)");
      return;
    }
    auto g = value.find(std::string(spec.gate));
    if (g == value.end()) return;
    std::string why;
    KeySpec gate_spec{.type = ValueType::kBool};
    auto on = normalize_leaf(gate_spec, *g, &why);
    if (!on) return error(shown + "." + std::string(spec.gate), why);
    if (on->get<bool>() && !spec.refusal.empty())
      error(shown, unsupported + "; " + std::string(spec.refusal) + " (or set " +
                       std::string(spec.gate) + ": false)");
    else if (on->get<bool>())
      error(shown, unsupported + " (remove it or set " + std::string(spec.gate) + ": false)");
  }

  void warn_ignored(const KeySpec& spec, const std::string& shown) {
    if (!spec.warn.empty()) out_.warnings.push_back({shown, "ignored: " + std::string(spec.warn)});
  }

  void leaf(const KeySpec& spec, const Json& value, const std::string& canon,
            const std::string& shown) {
    if (value == "auto") {
      if (spec.auto_ok) {
        out_.leaves[canon] = {value, shown, true};
        return;
      }
      // Never for the stage or a choice (an offload device): a silent
      // default there changes the whole run.
      if (in_validated_section(canon) && canon != "zero_optimization.stage" &&
          spec.choices.empty()) {
        out_.auto_dropped.insert(canon);
        return;
      }
      out_.bad.insert(canon);
      return error(shown, "does not accept \"auto\" (docs/config.md lists the keys that do)");
    }
    if (value.is_null()) {
      if (spec.nullable) {
        out_.leaves[canon] = {value, shown, false};
        return;
      }
      out_.bad.insert(canon);
      return error(shown, "expected " + std::string(type_name(spec.type)) + ", got null");
    }
    std::string why;
    std::optional<Json> norm = normalize_leaf(spec, value, &why);
    if (!norm) {
      out_.bad.insert(canon);
      return error(shown, why);
    }
    if (spec.support == Support::kUnsupported && !spec.rule_checked && !is_off(spec, *norm)) {
      out_.bad.insert(canon);
      return error(shown, not_supported(spec, leaf_name(shown)) + "; " + unsupported_tail(spec));
    }
    if (spec.support == Support::kInert && *norm != default_value(spec)) warn_ignored(spec, shown);
    out_.leaves[canon] = {*norm, shown, false};
  }

  WalkResult& out_;
  std::map<std::string, std::string> claimed_;  // canonical path -> spelling that set it
};

}  // namespace

WalkResult walk_document(const Json& doc) {
  WalkResult out;
  if (!doc.is_object()) {
    out.errors.push_back({"", "a DeepSpeed config must be a JSON object, got " + describe(doc)});
    return out;
  }
  if (std::optional<Json> modern = rewrite_legacy_forms(doc, &out.warnings))
    Walker(out).object(*modern, "", "");
  else
    Walker(out).object(doc, "", "");
  // An optimizer or scheduler type zerotrain lacks is refused by name; its
  // params are that type's, so Adam's key list says nothing useful there.
  for (const char* section : {"optimizer", "scheduler"}) {
    const std::string type = std::string(section) + ".type",
                      params = std::string(section) + ".params.";
    const bool refused =
        std::any_of(out.errors.begin(), out.errors.end(), [&](const ConfigError& e) {
          return e.path == type &&
                 e.message.find("not supported by zerotrain") != std::string::npos;
        });
    if (!refused) continue;
    std::erase_if(out.errors, [&](const ConfigError& e) {
      return e.path.starts_with(params) && e.message.starts_with("unknown key");
    });
  }
  return out;
}

}  // namespace zerotrain::config
