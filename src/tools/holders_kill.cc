// Signalling holders (`zerotrain holders --kill`) and the text of both.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "tools/holders.h"

namespace zerotrain::tools {
namespace {

struct SignalName {
  const char* name;
  int number;
};
constexpr SignalName kSignals[] = {{"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT},
                                   {"ABRT", SIGABRT}, {"KILL", SIGKILL}, {"USR1", SIGUSR1},
                                   {"USR2", SIGUSR2}, {"ALRM", SIGALRM}, {"TERM", SIGTERM},
                                   {"CONT", SIGCONT}, {"STOP", SIGSTOP}};

// Gone, or a zombie (state Z in /proc/PID/stat) that has stopped holding anything.
bool ended(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  if (content.empty()) return true;
  // "PID (comm) S ...": comm may contain spaces and parentheses; the state follows the last ')'.
  const size_t close = content.rfind(')');
  return close != std::string::npos && close + 2 < content.size() &&
         (content[close + 2] == 'Z' || content[close + 2] == 'X');
}

}  // namespace

StatusOr<int> parse_signal(std::string_view text) {
  std::string upper;
  for (char c : text) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (!upper.empty() &&
      std::all_of(upper.begin(), upper.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    const int n = upper.size() <= 3 ? std::stoi(upper) : -1;
    if (n >= 1 && n < NSIG) return n;
  }
  std::string_view name = upper;
  if (name.starts_with("SIG")) name.remove_prefix(3);
  for (const SignalName& s : kSignals)
    if (name == s.name) return s.number;
  return invalid_argument("signal: expected a name (TERM, KILL, INT, HUP, ...) or a number, got '" +
                          std::string(text) + "'");
}

std::vector<KillResult> kill_holders(const std::vector<Holder>& holders, int signal,
                                     std::chrono::milliseconds wait) {
  const pid_t self = getpid(), parent = getppid();
  std::vector<KillResult> results;
  for (const Holder& h : holders) {
    KillResult r;
    r.pid = h.pid;
    if (h.pid == self) {
      r.note = "not signalled: this process";
    } else if (h.pid == parent) {
      r.note = "not signalled: parent of this process";
    } else if (kill(h.pid, signal) != 0) {
      r.note = std::string("not signalled: ") + std::strerror(errno);
      r.ended = errno == ESRCH;
    } else {
      r.signalled = true;
    }
    results.push_back(std::move(r));
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    bool pending = false;
    for (KillResult& r : results) {
      if (r.signalled && !r.ended) r.ended = ended(r.pid);
      pending = pending || (r.signalled && !r.ended);
    }
    if (!pending || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return results;
}

std::string format_holders(const HolderScan& scan, const std::string& pattern) {
  std::ostringstream o;
  if (scan.holders.empty()) {
    o << "no process holds " << pattern << "\n";
  } else {
    o << "PID      USER         FILES (F open, m mapped)  COMMAND\n";
    for (const Holder& h : scan.holders) {
      std::string files;
      for (const HeldFile& f : h.files) {
        if (!files.empty()) files += ", ";
        files += f.path + " (" + (f.open_fd ? "F" : "") + (f.mapped ? "m" : "") + ")";
      }
      char head[64];
      std::snprintf(head, sizeof head, "%-8d %-12s ", static_cast<int>(h.pid), h.user.c_str());
      o << head << files << "  " << h.command << "\n";
    }
  }
  if (scan.unreadable > 0)
    o << scan.unreadable
      << " processes could not be inspected (permission denied); run as root to see them\n";
  return o.str();
}

std::string format_kill_results(const std::vector<KillResult>& results, int signal) {
  std::ostringstream o;
  for (const KillResult& r : results) {
    o << "pid " << r.pid << ": ";
    if (!r.signalled)
      o << r.note << (r.ended ? " (already gone)" : "");
    else
      o << "sent " << (strsignal(signal) ? strsignal(signal) : "signal") << " (" << signal << "), "
        << (r.ended ? "ended" : "still running");
    o << "\n";
  }
  return o.str();
}

}  // namespace zerotrain::tools
