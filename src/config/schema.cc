// Schema table assembly, lookup and the self-checks that keep it coherent
// (every parent declared, every alias target declared, every default valid).
#include "config/schema.h"

#include <map>
#include <mutex>

namespace zerotrain::config {
namespace {

struct Index {
  std::vector<KeySpec> keys;
  std::map<std::string, size_t, std::less<>> by_path;
  std::vector<Json> defaults;  // parallel to keys
};

void check_table(const Index& index) {
  for (const KeySpec& k : index.keys) {
    std::string_view parent = parent_path(k.path);
    if (!parent.empty()) {
      auto it = index.by_path.find(parent);
      ZT_CHECK(it != index.by_path.end(), "schema: parent of ", k.path, " is not declared");
      ZT_CHECK(index.keys[it->second].type == ValueType::kSection, "schema: parent of ", k.path,
               " is not a section");
    }
    if (!k.alias_of.empty())
      ZT_CHECK(index.by_path.count(k.alias_of) == 1, "schema: alias target of ", k.path,
               " is not declared");
  }
}

const Index& index() {
  static const Index* const kIndex = [] {
    auto* idx = new Index;
    add_top_level_keys(idx->keys);
    add_precision_keys(idx->keys);
    add_optimizer_keys(idx->keys);
    add_zero_keys(idx->keys);
    add_monitor_keys(idx->keys);
    add_lora_keys(idx->keys);
    add_parallel_keys(idx->keys);
    add_unsupported_sections(idx->keys);
    for (size_t i = 0; i < idx->keys.size(); ++i) {
      const KeySpec& k = idx->keys[i];
      ZT_CHECK(idx->by_path.emplace(std::string(k.path), i).second, "schema: duplicate key ",
               k.path);
      Json parsed = Json::parse(k.default_json, nullptr, /*allow_exceptions=*/false);
      ZT_CHECK(!parsed.is_discarded(), "schema: default of ", k.path, " is not JSON");
      idx->defaults.push_back(std::move(parsed));
    }
    check_table(*idx);
    return idx;
  }();
  return *kIndex;
}

}  // namespace

const std::vector<KeySpec>& schema() { return index().keys; }

const KeySpec* find_key(std::string_view path) {
  const Index& idx = index();
  auto it = idx.by_path.find(path);
  return it == idx.by_path.end() ? nullptr : &idx.keys[it->second];
}

std::vector<const KeySpec*> children_of(std::string_view section_path) {
  std::vector<const KeySpec*> out;
  for (const KeySpec& k : schema())
    if (parent_path(k.path) == section_path) out.push_back(&k);
  return out;
}

const Json& default_value(const KeySpec& spec) {
  const Index& idx = index();
  return idx.defaults[static_cast<size_t>(&spec - idx.keys.data())];
}

std::string_view parent_path(std::string_view path) {
  size_t dot = path.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : path.substr(0, dot);
}

std::string_view leaf_name(std::string_view path) {
  size_t dot = path.rfind('.');
  return dot == std::string_view::npos ? path : path.substr(dot + 1);
}

std::string_view type_name(ValueType type) {
  switch (type) {
    case ValueType::kBool:
      return "boolean";
    case ValueType::kInt:
      return "integer";
    case ValueType::kFloat:
      return "number";
    case ValueType::kString:
      return "string";
    case ValueType::kFloatPair:
      return "[number, number]";
    case ValueType::kStringList:
      return "[string, ...]";
    case ValueType::kSection:
      return "object";
    case ValueType::kOpaque:
      return "object";
  }
  return "?";
}

std::string_view support_name(Support support) {
  switch (support) {
    case Support::kSupported:
      return "supported";
    case Support::kInert:
      return "accepted, no effect";
    case Support::kUnsupported:
      return "default only";
    case Support::kRejected:
      return "rejected";
    case Support::kAlias:
      return "alias";
    case Support::kDeprecated:
      return "deprecated";
  }
  return "?";
}

std::string not_supported(const KeySpec& spec, std::string_view written) {
  std::string_view meaning = spec.meaning.empty() ? spec.help : spec.meaning;
  while (!meaning.empty() && (meaning.back() == '.' || meaning.back() == ' '))
    meaning.remove_suffix(1);
  std::string msg = "'";
  msg.append(written.empty() ? leaf_name(spec.path) : written)
      .append("' is not supported by zerotrain");
  if (!meaning.empty()) msg.append(" (DeepSpeed: ").append(meaning).append(")");
  return msg;
}

bool list_contains(std::string_view list, std::string_view name) {
  while (!list.empty()) {
    size_t bar = list.find('|');
    if (list.substr(0, bar) == name) return true;
    if (bar == std::string_view::npos) break;
    list.remove_prefix(bar + 1);
  }
  return false;
}

}  // namespace zerotrain::config
