// RESULTS.md's ZeRO section from zt_zero_bench's JSON lines: one row per
// stage × offload × overlap_comm case (step time, tokens/s, each rank's
// VmHWM, the engine's device/host bytes, wire bytes), then the overlap
// table: each overlap_comm case's step against max(compute alone,
// communication alone) of the same run (docs/architecture.md: at most 1.1×) and
// against its inline twin. Wrapped in markers so scripts/bench.sh can keep
// or replace it.
//
//   std::string md = zero_section(lines);   // lines: a JSON array of case objects
//
// Thread-safety: pure functions (zero_section_from_file reads a file).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace zerotrain::bench {

inline constexpr const char* kZeroSectionBegin = "<!-- bench/zero: begin -->";
inline constexpr const char* kZeroSectionEnd = "<!-- bench/zero: end -->";

std::string zero_section(const nlohmann::json& cases);
// Reads JSON lines (blank lines skipped); IoError naming the path, or
// Corruption naming the line that does not parse.
StatusOr<std::string> zero_section_from_file(const std::string& path);

}  // namespace zerotrain::bench
