// The config schema: one KeySpec per ds_config.json key (path, type,
// default, range or choices, support status, help, and the Config field it
// fills). The parser, validator, effective-config printer and docs/config.md
// are all driven from this table. Internal to src/config/.
//
//   const KeySpec* spec = find_key("zero_optimization.stage");
//   for (const KeySpec& k : schema()) ...;
//
// Thread-safety: the table is built once on first use (static local) and
// read-only afterwards.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace zerotrain::config {

using Json = nlohmann::ordered_json;

enum class ValueType {
  kBool,
  kInt,
  kFloat,
  kString,      // an enum when `choices` is set
  kFloatPair,   // [a, b], e.g. betas
  kStringList,  // ["a", "b"]; each one of `choices` when set
  kSection,     // an object whose keys are declared below it
  kOpaque,      // a section zerotrain does not implement (see `gate`)
};

enum class Support {
  kSupported,    // zerotrain implements it
  kInert,        // accepted and validated; no effect in zerotrain (a PyTorch/CUDA knob)
  kUnsupported,  // accepted only at its default; otherwise "not supported yet"
  kRejected,     // always an error; `help` says what to write instead
  kAlias,        // another spelling of `alias_of`
  kDeprecated,   // an old spelling of `alias_of`, accepted with a warning
};

struct KeySpec {
  std::string_view path;  // "zero_optimization.offload_optimizer.pin_memory"
  ValueType type = ValueType::kBool;
  std::string_view default_json = "null";  // JSON text of the default
  std::optional<double> min;               // inclusive unless min_exclusive
  std::optional<double> max;
  bool min_exclusive = false;
  std::string_view choices;      // "none|cpu|nvme" (matched case-insensitively)
  std::string_view unsupported;  // choices DeepSpeed has and zerotrain lacks
  Support support = Support::kSupported;
  std::string_view alias_of;    // kAlias, kDeprecated
  std::string_view applies_to;  // "Adam|AdamW": optimizer/scheduler types using it
  bool auto_ok = false;         // may be "auto" (resolved from TrainerArgs)
  bool nullable = false;        // may be null (= unset)
  std::string_view gate;        // kOpaque: key that must be false/absent ("enabled")
  // kInert keys whose silence could mislead: the warning given when the key
  // is set to anything but its default ("ignored: <warn>").
  std::string_view warn;
  // kUnsupported: what to write instead, after "is not supported by
  // zerotrain (DeepSpeed: <meaning>); ". Empty: "only its default is accepted".
  std::string_view refusal;
  // kUnsupported: what the key does in DeepSpeed, for its refusal; `help`
  // when empty.
  std::string_view meaning;
  // kUnsupported leaves: a value besides the default that also means "off"
  // and is accepted (autotp_size 1 as well as 0).
  std::string_view off_json;
  // kUnsupported leaves whose verdict depends on other keys (DeepSpeed
  // itself refuses some combinations, ignores others): the walk keeps the
  // value and rules_unsupported.cc decides.
  bool rule_checked = false;
  std::string_view help;
  void (*set)(Config&, const Json&) = nullptr;  // fills the typed field
  Json (*get)(const Config&) = nullptr;         // reads it back
};

// The whole table, in documentation order.
const std::vector<KeySpec>& schema();
// The entry for a canonical or alias path; nullptr when unknown.
const KeySpec* find_key(std::string_view path);
// Direct children of a section path ("" = top level), aliases included.
std::vector<const KeySpec*> children_of(std::string_view section_path);
// The parsed default of a leaf.
const Json& default_value(const KeySpec& spec);

std::string_view parent_path(std::string_view path);
std::string_view leaf_name(std::string_view path);
std::string_view type_name(ValueType type);
std::string_view support_name(Support support);
// "'<leaf>' is not supported by zerotrain (DeepSpeed: <meaning>)": the
// start of every refusal of a kUnsupported key.
// `written`: the key as the config spells it (an alias), else the leaf.
std::string not_supported(const KeySpec& spec, std::string_view written = {});
// True when `name` is one of the '|'-separated items of `list`.
bool list_contains(std::string_view list, std::string_view name);

// Table parts (schema_*.cc).
void add_top_level_keys(std::vector<KeySpec>& out);
void add_precision_keys(std::vector<KeySpec>& out);
void add_optimizer_keys(std::vector<KeySpec>& out);  // and the scheduler's
void add_scheduler_keys(std::vector<KeySpec>& out);
void add_zero_keys(std::vector<KeySpec>& out);
void add_monitor_keys(std::vector<KeySpec>& out);
void add_lora_keys(std::vector<KeySpec>& out);
void add_parallel_keys(std::vector<KeySpec>& out);  // tensor/sequence/expert parallelism
void add_unsupported_sections(std::vector<KeySpec>& out);

}  // namespace zerotrain::config
