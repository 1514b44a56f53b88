// Self-pipe signal handling for the launcher, and signal names. See signals.h.
#include "launch/signals.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/status.h"

namespace zerotrain::launch {
namespace {

constexpr int kHandledSignals[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGTSTP, SIGPIPE};

std::atomic<int> g_signal_write_fd{-1};

void on_signal(int sig) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(sig);
  int fd = g_signal_write_fd.load();
  if (fd >= 0) (void)!::write(fd, &byte, 1);  // full pipe: a wakeup is already queued
  errno = saved;
}

}  // namespace

SignalPipe::SignalPipe() {
  static_assert(sizeof(kHandledSignals) / sizeof(kHandledSignals[0]) == kNumHandled);
  ZT_CHECK(::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) == 0, "pipe2: ", std::strerror(errno));
  int expected = -1;
  ZT_CHECK(g_signal_write_fd.compare_exchange_strong(expected, fds_[1]),
           "only one zerotrain::launch::SignalPipe (supervise()) may exist at a time");
  for (int i = 0; i < kNumHandled; ++i) {
    struct sigaction sa = {};
    sa.sa_handler = kHandledSignals[i] == SIGPIPE ? SIG_IGN : on_signal;
    sa.sa_flags = SA_RESTART | (kHandledSignals[i] == SIGCHLD ? SA_NOCLDSTOP : 0);
    sigemptyset(&sa.sa_mask);
    ::sigaction(kHandledSignals[i], &sa, &old_[i]);
  }
}

SignalPipe::~SignalPipe() {
  for (int i = 0; i < kNumHandled; ++i) ::sigaction(kHandledSignals[i], &old_[i], nullptr);
  g_signal_write_fd.store(-1);
  ::close(fds_[0]);
  ::close(fds_[1]);
}

std::vector<int> SignalPipe::drain() {
  std::vector<int> signals;
  unsigned char buf[256];
  ssize_t n;
  while ((n = ::read(fds_[0], buf, sizeof buf)) > 0)
    for (ssize_t i = 0; i < n; ++i)
      if (buf[i] != SIGCHLD) signals.push_back(buf[i]);
  return signals;
}

void reset_signals_in_child() {
  for (int sig : kHandledSignals) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGHUP:
      return "SIGHUP";
    case SIGINT:
      return "SIGINT";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGILL:
      return "SIGILL";
    case SIGTRAP:
      return "SIGTRAP";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGKILL:
      return "SIGKILL";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGUSR2:
      return "SIGUSR2";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGALRM:
      return "SIGALRM";
    case SIGTERM:
      return "SIGTERM";
    case SIGXCPU:
      return "SIGXCPU";
  }
  return "signal " + std::to_string(sig);
}

}  // namespace zerotrain::launch
