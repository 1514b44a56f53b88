// Line-atomic stderr logging.
#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "core/env.h"

namespace zerotrain::log {
namespace {
std::atomic<Level> g_level{Level::kInfo};
std::atomic<int> g_rank{-1};
std::mutex g_mutex;

const char* level_tag(Level l) {
  switch (l) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warning";
    case Level::kError:
      return "error";
  }
  return "";
}
}  // namespace

void set_level(Level l) { g_level = l; }

Status set_level_from_env() {
  std::optional<std::string> text = env::get("ZEROTRAIN_LOG_LEVEL");
  if (!text) return ok_status();
  static constexpr std::pair<const char*, Level> kNames[] = {{"debug", Level::kDebug},
                                                             {"info", Level::kInfo},
                                                             {"warn", Level::kWarn},
                                                             {"warning", Level::kWarn},
                                                             {"error", Level::kError}};
  for (const auto& [name, l] : kNames) {
    if (*text == name) {
      set_level(l);
      return ok_status();
    }
  }
  return invalid_argument("environment variable ZEROTRAIN_LOG_LEVEL='" + *text +
                          "' is not one of debug, info, warn, error");
}
Level level() { return g_level; }
void set_rank(int rank) { g_rank = rank; }

void write(Level l, const std::string& line) {
  std::lock_guard<std::mutex> lock(g_mutex);
  int rank = g_rank;
  if (rank >= 0)
    std::fprintf(stderr, "[zerotrain rank %d] %s: %s\n", rank, level_tag(l), line.c_str());
  else
    std::fprintf(stderr, "[zerotrain] %s: %s\n", level_tag(l), line.c_str());
  std::fflush(stderr);
}

}  // namespace zerotrain::log
