// `zerotrain holders`: the processes holding device files (by default
// /dev/nvidia*), as `fuser -v /dev/nvidia*` finds them — open descriptors
// (/proc/PID/fd/*) and memory mappings (/proc/PID/maps) — and optionally
// signals them, to clear stale holders of GPU memory. Needs no GPU: the
// pattern is any glob, so tests use their own files.
//
//   ZT_ASSIGN_OR_RETURN(HolderScan scan, find_holders({.pattern = "/dev/nvidia*"}));
//   std::cout << format_holders(scan);
//   ZT_ASSIGN_OR_RETURN(int sig, parse_signal("TERM"));
//   std::vector<KillResult> r = kill_holders(scan.holders, sig, std::chrono::seconds(2));
//
// Thread-safety: functions only; results reflect /proc at the time of the
// call (processes come and go while it runs).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace zerotrain::tools {

inline constexpr const char* kDefaultHolderPattern = "/dev/nvidia*";

struct HeldFile {
  std::string path;
  bool open_fd = false;  // an open descriptor (fuser's F)
  bool mapped = false;   // a memory mapping (fuser's m)
};

struct Holder {
  pid_t pid = 0;
  std::string user;             // login name, or the uid when unknown
  std::string command;          // cmdline with spaces, or [comm] for kernel threads
  std::vector<HeldFile> files;  // sorted by path
};

struct HolderScan {
  std::vector<Holder> holders;  // sorted by pid
  int unreadable = 0;           // processes skipped: /proc entries we may not read
};

struct HoldersOptions {
  std::string pattern = kDefaultHolderPattern;  // fnmatch(3) glob, '*' stops at '/'
  std::string proc_root = "/proc";
};

// Every process but this one holding a file whose path matches the pattern.
// Other users' unreadable entries are counted in `unreadable`, not errors;
// IoError only when proc_root itself cannot be listed.
StatusOr<HolderScan> find_holders(const HoldersOptions& options);

// "TERM", "SIGTERM", "term", "15", "KILL", "9", ...; InvalidArgument otherwise.
StatusOr<int> parse_signal(std::string_view text);

struct KillResult {
  pid_t pid = 0;
  bool signalled = false;
  bool ended = false;  // gone, or a zombie awaiting its parent, within the wait
  std::string note;    // why not signalled ("this process", "parent", strerror)
};

// Sends `signal` to each holder (never to this process or its parent), then
// waits up to `wait` for them to end.
std::vector<KillResult> kill_holders(const std::vector<Holder>& holders, int signal,
                                     std::chrono::milliseconds wait);

std::string format_holders(const HolderScan& scan, const std::string& pattern);
std::string format_kill_results(const std::vector<KillResult>& results, int signal);

}  // namespace zerotrain::tools
