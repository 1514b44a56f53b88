// Entry points: JSON text / file -> ParseResult / Config, and the
// effective-config printout (see config.h).
#include "config/config.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "config/json_value.h"
#include "config/locate.h"
#include "config/resolve.h"
#include "config/walk.h"

namespace zerotrain::config {
namespace {

template <typename E>
std::string_view enum_name(E v) {
  for (const auto& [value, name] : EnumNames<E>::kNames)
    if (value == v) return name == nullptr ? "none" : name;
  return "?";
}

std::string join(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

constexpr size_t kMaxJsonDepth = 64;
struct TooDeep {};

// Parses with comments allowed; duplicate keys become errors (DeepSpeed's
// hjson hook refuses them too), a syntax error one error with line/column.
std::optional<Json> parse_json(std::string_view text, std::vector<ConfigError>* errors) {
  struct Frame {
    bool object;
    std::string path;
    std::set<std::string> keys;
    std::string last_key;
  };
  std::vector<Frame> stack;
  auto callback = [&](int, nlohmann::json::parse_event_t ev, Json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (ev == E::object_start || ev == E::array_start) {
      // Paths are copied per level, so depth costs time squared; no real
      // config comes near this.
      if (stack.size() >= kMaxJsonDepth) throw TooDeep{};
      std::string path;
      if (!stack.empty())
        path = stack.back().object ? join(stack.back().path, stack.back().last_key)
                                   : stack.back().path + "[]";
      stack.push_back({ev == E::object_start, path, {}, {}});
    } else if (ev == E::object_end || ev == E::array_end) {
      stack.pop_back();
    } else if (ev == E::key) {
      Frame& f = stack.back();
      f.last_key = parsed.get<std::string>();
      if (!f.keys.insert(f.last_key).second)
        errors->push_back({join(f.path, f.last_key), "duplicate key"});
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true,
                       /*ignore_comments=*/true);
  } catch (const nlohmann::json::parse_error& e) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      column = text[i] == '\n' ? 1 : column + 1;
      line += text[i] == '\n';
    }
    std::string detail = e.what();
    size_t at = detail.find("column");
    at = at == std::string::npos ? std::string::npos : detail.find(": ", at);
    if (at != std::string::npos) detail = detail.substr(at + 2);
    errors->push_back({"", "JSON syntax error at line " + std::to_string(line) + ", column " +
                               std::to_string(column) + ": " + detail});
    return std::nullopt;
  } catch (const TooDeep&) {
    errors->push_back({stack.back().path,
                       "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels"});
    return std::nullopt;
  } catch (const nlohmann::json::exception& e) {
    // e.g. 406 "number overflow parsing '1e400'": no byte offset, but the
    // callback's stack still says where the parser was.
    std::string path;
    if (!stack.empty())
      path = stack.back().object ? join(stack.back().path, stack.back().last_key)
                                 : stack.back().path + "[]";
    std::string detail = e.what();
    size_t at = detail.find("] ");
    if (at != std::string::npos) detail = detail.substr(at + 2);
    errors->push_back({path, "invalid JSON value: " + detail});
    return std::nullopt;
  }
}

void put(Json& root, std::string_view path, Json value) {
  Json* node = &root;
  while (true) {
    size_t dot = path.find('.');
    std::string seg(path.substr(0, dot));
    if (dot == std::string_view::npos) {
      (*node)[seg] = std::move(value);
      return;
    }
    node = &(*node)[seg];
    path.remove_prefix(dot + 1);
  }
}

bool printed(const KeySpec& k, const Config& c) {
  if (k.type == ValueType::kSection || k.type == ValueType::kOpaque) return false;
  if (k.support == Support::kRejected || k.support == Support::kAlias ||
      k.support == Support::kDeprecated)
    return false;
  std::string_view path = k.path;
  bool in_opt = path.rfind("optimizer.", 0) == 0, in_sched = path.rfind("scheduler.", 0) == 0;
  if (in_opt && c.optimizer.type == OptimizerType::kNone) return false;
  if (in_sched && c.scheduler.type == SchedulerType::kNone) return false;
  if (k.applies_to.empty()) return true;
  std::string_view type = in_opt ? enum_name(c.optimizer.type) : enum_name(c.scheduler.type);
  return list_contains(k.applies_to, type);
}

}  // namespace

std::string_view to_string(DType v) { return enum_name(v); }
std::string_view to_string(OffloadDevice v) { return enum_name(v); }
std::string_view to_string(OptimizerType v) { return enum_name(v); }
std::string_view to_string(SchedulerType v) { return enum_name(v); }
std::string_view to_string(WarmupType v) { return enum_name(v); }
std::string_view to_string(AllreduceOp v) { return enum_name(v); }
std::string_view to_string(TagValidation v) { return enum_name(v); }

Status ParseResult::status() const {
  if (errors.empty()) return ok_status();
  std::string msg = "invalid DeepSpeed config (" + std::to_string(errors.size()) +
                    (errors.size() == 1 ? " problem):" : " problems):");
  for (const ConfigError& e : errors) msg += "\n  " + e.to_string();
  return invalid_argument(msg);
}

ParseResult parse_config_detailed(std::string_view json_text, const TrainerArgs& args,
                                  const TrainerArgs& defaults) {
  ParseResult result;
  std::optional<Json> doc = parse_json(json_text, &result.errors);
  if (!doc) return result;
  WalkResult walk = walk_document(*doc);
  if (!doc->is_object()) {  // nothing to resolve; the batch rule would only echo it
    result.errors = std::move(walk.errors);
    return result;
  }
  Resolution r = resolve_config(walk, args, defaults);
  // Duplicate-key errors (already in result.errors) first, then document order.
  result.errors.insert(result.errors.end(), walk.errors.begin(), walk.errors.end());
  result.errors.insert(result.errors.end(), r.errors.begin(), r.errors.end());
  result.warnings = std::move(walk.warnings);
  result.warnings.insert(result.warnings.end(), r.warnings.begin(), r.warnings.end());
  const std::map<std::string, int> lines = key_lines(json_text);
  for (auto* list : {&result.errors, &result.warnings}) {
    for (ConfigError& e : *list) {
      auto it = lines.find(e.path);
      if (it != lines.end()) e.line = it->second;
    }
  }
  if (result.errors.empty()) {
    r.config.activation_checkpointing.enabled =
        doc->contains("activation_checkpointing") && !(*doc)["activation_checkpointing"].is_null();
    r.config.warnings.clear();
    for (const ConfigError& w : result.warnings) r.config.warnings.push_back(w.to_string());
    result.config = std::move(r.config);
  }
  return result;
}

StatusOr<Config> parse_config(std::string_view json_text, const TrainerArgs& args,
                              const TrainerArgs& defaults) {
  ParseResult r = parse_config_detailed(json_text, args, defaults);
  if (!r.config) return r.status();
  return std::move(*r.config);
}

StatusOr<Config> load_config_file(const std::string& path, const TrainerArgs& args,
                                  const TrainerArgs& defaults) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return io_error("config file " + path + " is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    if (err == ENOENT) return not_found("config file " + path + " does not exist");
    return io_error("cannot open config file " + path + ": " + std::strerror(err));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return io_error("cannot read config file " + path);
  StatusOr<Config> config = parse_config(text.str(), args, defaults);
  if (!config.ok()) return config.status().with_context(path);
  return config;
}

std::string effective_config_json(const Config& c) {
  Json root = Json::object();
  for (const KeySpec& k : schema()) {
    if (!printed(k, c)) continue;
    Json value = default_value(k);
    if (k.get != nullptr) {
      value = k.get(c);
    } else if (auto it = c.inert_values.find(std::string(k.path)); it != c.inert_values.end()) {
      value = Json::parse(it->second);
    }
    put(root, k.path, std::move(value));
  }
  root["_zerotrain"] = {{"world_size", c.batch.world_size},
                        {"resolved_from_auto", c.resolved_from_auto},
                        {"auto_sources", c.auto_sources},
                        {"warnings", c.warnings}};
  return root.dump(2) + "\n";
}

}  // namespace zerotrain::config
