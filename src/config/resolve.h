// From a walked document to a typed Config: defaults, legacy spellings,
// "auto" from TrainerArgs (and mismatch checks against them), per-type
// derived defaults, the batch triangle, the typed fields, then the
// cross-field rules. Internal to src/config/.
//
//   Resolution r = resolve_config(walk_document(doc), args, defaults);
//   if (r.errors.empty()) use(r.config);
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/walk.h"

namespace zerotrain::config {

struct Resolution {
  Config config;
  std::vector<ConfigError> errors;
  std::vector<ConfigError> warnings;
};

Resolution resolve_config(const WalkResult& walk, const TrainerArgs& args,
                          const TrainerArgs& defaults);

// What the rules need besides the Config: where each value came from.
struct RuleContext {
  const WalkResult& walk;
  const std::set<std::string>& bad;  // canonical paths already reported
  bool given(const std::string& path) const { return walk.leaves.count(path) != 0; }
  bool ok(std::initializer_list<const char*> paths) const {
    for (const char* p : paths)
      if (bad.count(p)) return false;
    return true;
  }
};

void check_cross_field_rules(const Config& c, const RuleContext& ctx,
                             std::vector<ConfigError>* errors, std::vector<ConfigError>* warnings);

// Keys DeepSpeed ignores, refuses or implements depending on the rest of the
// config (rules_unsupported.cc); clears what DeepSpeed would ignore.
void check_context_rules(Config& c, const RuleContext& ctx, std::vector<ConfigError>* errors,
                         std::vector<ConfigError>* warnings);

}  // namespace zerotrain::config
