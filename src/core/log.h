// Minimal leveled logging to stderr with a "[zerotrain rank R]" prefix, so
// interleaved worker output stays attributable.
//
//   log::info("step ", step, " loss ", loss);
//
// Thread-safety: each call writes one whole line under a mutex.
#pragma once

#include <string>

#include "core/status.h"

namespace zerotrain::log {

enum class Level { kDebug, kInfo, kWarn, kError };

void set_level(Level level);
// Applies ZEROTRAIN_LOG_LEVEL (debug, info, warn, error); InvalidArgument
// naming the variable for anything else. Unset keeps the current level.
Status set_level_from_env();
Level level();
// Rank shown in the prefix; -1 (default) shows none.
void set_rank(int rank);
void write(Level level, const std::string& line);

template <typename... Args>
void debug(Args&&... args) {
  if (level() <= Level::kDebug) write(Level::kDebug, detail::concat(args...));
}
template <typename... Args>
void info(Args&&... args) {
  if (level() <= Level::kInfo) write(Level::kInfo, detail::concat(args...));
}
template <typename... Args>
void warn(Args&&... args) {
  if (level() <= Level::kWarn) write(Level::kWarn, detail::concat(args...));
}
template <typename... Args>
void error(Args&&... args) {
  write(Level::kError, detail::concat(args...));
}

}  // namespace zerotrain::log
