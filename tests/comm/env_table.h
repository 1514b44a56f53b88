// Test helper: an environment as a table, for the functions that read one
// through an EnvLookup (comm/placement.h, comm/job_env.h, launch/agent.h).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "comm/placement.h"

namespace zerotrain::comm::testing {

using EnvTable = std::map<std::string, std::string>;

inline EnvLookup env_table(EnvTable t) {
  return [t = std::move(t)](std::string_view name) -> std::optional<std::string> {
    auto it = t.find(std::string(name));
    if (it == t.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace zerotrain::comm::testing
