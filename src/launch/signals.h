// Launcher signal plumbing: a self-pipe written by the handlers of SIGCHLD,
// SIGINT, SIGTERM, SIGHUP and SIGTSTP, so one poll() waits for worker exits
// and launcher signals alike (no polling interval, no busy loop); names of
// signals for messages.
//
//   SignalPipe pipe;                        // handlers installed, SIGPIPE ignored
//   struct pollfd p = {pipe.read_fd(), POLLIN, 0};
//   ::poll(&p, 1, timeout_ms);
//   for (int sig : pipe.drain()) handle(sig);  // SIGCHLD only wakes the poll
//
// Thread-safety: the handlers are process-wide and run on any thread; one
// SignalPipe may exist at a time in a process (checked).
#pragma once

#include <signal.h>

#include <string>
#include <vector>

namespace zerotrain::launch {

class SignalPipe {
 public:
  SignalPipe();   // installs the handlers
  ~SignalPipe();  // restores the previous ones
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  int read_fd() const { return fds_[0]; }
  // Empties the pipe; returns the launcher signals (not SIGCHLD) in order.
  std::vector<int> drain();

 private:
  static constexpr int kNumHandled = 6;
  int fds_[2];
  struct sigaction old_[kNumHandled];
};

// For a forked child before exec: default dispositions for everything
// SignalPipe handles (an ignored SIGPIPE would survive exec), empty mask.
// Async-signal-safe.
void reset_signals_in_child();

// "SIGKILL" for 9; "signal 63" for ones without a common name.
std::string signal_name(int sig);

}  // namespace zerotrain::launch
