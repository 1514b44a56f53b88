// Walks a parsed ds_config document against the schema: finds unknown keys,
// maps aliases to canonical paths, checks and normalises every leaf value
// (types, numeric strings, ranges, choices, "auto", unsupported values) and
// collects every problem. Internal to src/config/.
//
//   WalkResult w = walk_document(doc);
//   if (w.leaves.count("zero_optimization.stage")) ...;
//
// Thread-safety: pure function.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/schema.h"

namespace zerotrain::config {

struct GivenValue {
  Json value;         // normalised: int64 for kInt, double for kFloat, canonical choice
  std::string shown;  // the path as the user spelled it (aliases, bfloat16)
  bool is_auto = false;
};

struct WalkResult {
  std::map<std::string, GivenValue> leaves;     // canonical path -> value the user gave
  std::map<std::string, std::string> sections;  // canonical section path -> as spelled
  std::set<std::string> bad;                    // canonical paths whose value was refused
  // "auto" on a key with no trainer argument, in a section DeepSpeed
  // validates (it drops such keys, so the default applies).
  std::set<std::string> auto_dropped;
  std::vector<ConfigError> errors;
  std::vector<ConfigError> warnings;

  // The user's spelling of a canonical path, or the path itself.
  std::string shown(const std::string& canonical) const;
};

WalkResult walk_document(const Json& doc);

// The document with DeepSpeed's legacy forms rewritten to the current ones
// (`"zero_optimization": true` and its top-level allgather_size), each with
// a warning; nullopt when there is none (legacy_forms.cc).
std::optional<Json> rewrite_legacy_forms(const Json& doc, std::vector<ConfigError>* warnings);

// Normalises one leaf value; on failure returns nullopt and sets *error.
std::optional<Json> normalize_leaf(const KeySpec& spec, const Json& value, std::string* error);

}  // namespace zerotrain::config
