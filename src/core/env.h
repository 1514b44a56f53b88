// The one place zerotrain reads environment variables. Every variable is
// declared once in the registry (env.cc) with its meaning; reading a name
// that is not registered is a bug (ZT_CHECK). `describe()` lists the ones
// that are set, for the start-up log.
//
//   ZT_ASSIGN_OR_RETURN(int64_t rank, env::get_int("RANK", 0));
//
// Thread-safety: reads only; safe from any thread once main() runs.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace zerotrain::env {

struct Var {
  const char* name;
  const char* meaning;
};

std::span<const Var> registry();
// Variable families read by prefix ("NCCL_", "UCX_").
std::span<const Var> registered_prefixes();
// Every set variable starting with a registered prefix, as (name, value).
std::vector<std::pair<std::string, std::string>> with_prefix(std::string_view prefix);

// The raw value, or nullopt when unset.
std::optional<std::string> get(std::string_view name);
// An integer value; `fallback` when unset; InvalidArgument naming the
// variable when set to something that is not an integer.
StatusOr<int64_t> get_int(std::string_view name, int64_t fallback);
StatusOr<double> get_double(std::string_view name, double fallback);
// "RANK=0 WORLD_SIZE=2 ..." for the registered variables that are set;
// the job secret is shown as "<set>".
std::string describe();

}  // namespace zerotrain::env
