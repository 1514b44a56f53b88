// Line-atomic stderr logging.
#include "common/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace zerotrain::log {
namespace {
std::atomic<Level> g_level{Level::kInfo};
std::atomic<int> g_rank{-1};
std::mutex g_mutex;

const char* level_tag(Level l) {
  switch (l) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warning";
    case Level::kError: return "error";
  }
  return "";
}
}  // namespace

void set_level(Level l) { g_level = l; }
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
