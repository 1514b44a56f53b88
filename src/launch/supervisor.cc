// Worker supervision: fork/exec into own process groups, a SIGCHLD/SIGINT/
// SIGTERM/SIGHUP self-pipe, and the stop/escalate state machine. See
// supervisor.h.
#include "launch/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>

extern char** environ;  // inherited by workers; read-only copy, not a variable lookup

namespace zerotrain::launch {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kHandledSignals[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGPIPE};
constexpr int kNumHandled = sizeof(kHandledSignals) / sizeof(kHandledSignals[0]);

constexpr int64_t kMaxPollMs = 3600 * 1000;  // poll() takes an int; re-armed each loop
constexpr double kMaxGraceS = 1e7;           // keeps the deadline arithmetic finite

std::atomic<int> g_signal_write_fd{-1};

void on_signal(int sig) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(sig);
  int fd = g_signal_write_fd.load();
  if (fd >= 0) (void)!::write(fd, &byte, 1);  // full pipe: a wakeup is already queued
  errno = saved;
}

// Installs the self-pipe handlers for its lifetime (SIGPIPE is ignored).
class SignalPipe {
 public:
  SignalPipe() {
    ZT_CHECK(::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) == 0, "pipe2: ", std::strerror(errno));
    int expected = -1;
    ZT_CHECK(g_signal_write_fd.compare_exchange_strong(expected, fds_[1]),
             "only one zerotrain::launch::supervise() may run at a time");
    for (int i = 0; i < kNumHandled; ++i) {
      struct sigaction sa = {};
      sa.sa_handler = kHandledSignals[i] == SIGPIPE ? SIG_IGN : on_signal;
      sa.sa_flags = SA_RESTART | (kHandledSignals[i] == SIGCHLD ? SA_NOCLDSTOP : 0);
      sigemptyset(&sa.sa_mask);
      ::sigaction(kHandledSignals[i], &sa, &old_[i]);
    }
  }
  ~SignalPipe() {
    for (int i = 0; i < kNumHandled; ++i) ::sigaction(kHandledSignals[i], &old_[i], nullptr);
    g_signal_write_fd.store(-1);
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  int read_fd() const { return fds_[0]; }
  // Empties the pipe; returns the launcher signals (not SIGCHLD) in order.
  std::vector<int> drain() {
    std::vector<int> signals;
    unsigned char buf[256];
    ssize_t n;
    while ((n = ::read(fds_[0], buf, sizeof buf)) > 0)
      for (ssize_t i = 0; i < n; ++i)
        if (buf[i] != SIGCHLD) signals.push_back(buf[i]);
    return signals;
  }

 private:
  int fds_[2];
  struct sigaction old_[kNumHandled];
};

// argv and envp for execvpe, built before fork (no allocation in the child).
struct ExecImage {
  std::vector<std::string> env_strings;
  std::vector<char*> argv, envp;
};

ExecImage build_image(const WorkerSpec& w) {
  ExecImage img;
  std::set<std::string> overridden;
  for (const EnvVar& v : w.env) overridden.insert(v.name);
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    if (!overridden.count(entry.substr(0, entry.find('=')))) img.env_strings.push_back(entry);
  }
  for (const EnvVar& v : w.env) img.env_strings.push_back(v.name + "=" + v.value);
  for (std::string& s : img.env_strings) img.envp.push_back(s.data());
  img.envp.push_back(nullptr);
  for (const std::string& a : w.argv) img.argv.push_back(const_cast<char*>(a.c_str()));
  img.argv.push_back(nullptr);
  return img;
}

[[noreturn]] void exec_child(const ExecImage& img, int stdin_fd, int err_fd, pid_t launcher) {
  ::setpgid(0, 0);
  // Our own process group hides the worker from the terminal's signals, so a
  // launcher killed outright (SIGKILL, OOM) must still take it down.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != launcher) ::_exit(127);               // the launcher died before prctl
  for (int sig : kHandledSignals) ::signal(sig, SIG_DFL);  // SIGPIPE's SIG_IGN would survive exec
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (stdin_fd == STDIN_FILENO)
    ::fcntl(stdin_fd, F_SETFD, 0);  // dup2 onto itself would keep O_CLOEXEC
  else
    ::dup2(stdin_fd, STDIN_FILENO);
  ::execvpe(img.argv[0], img.argv.data(), img.envp.data());
  int err = errno;
  (void)!::write(err_fd, &err, sizeof err);
  ::_exit(127);
}

// Starts one worker; a failed exec is reported here (the error pipe is
// closed by a successful exec, so the read returns 0 then).
StatusOr<pid_t> spawn(const WorkerSpec& w) {
  ZT_CHECK(!w.argv.empty(), "worker ", w.rank, " has no argv");
  ExecImage img = build_image(w);
  int err_pipe[2], in_pipe[2] = {-1, -1};
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return errno_status("pipe2", errno);
  if (!w.stdin_data.empty() && ::pipe2(in_pipe, O_CLOEXEC) != 0) {
    int err = errno;
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    return errno_status("pipe2", err);
  }
  int stdin_fd = in_pipe[0] >= 0 ? in_pipe[0] : ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t launcher = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) exec_child(img, stdin_fd, err_pipe[1], launcher);
  int fork_errno = errno;
  ::close(err_pipe[1]);
  ::close(stdin_fd);
  if (pid < 0) {
    ::close(err_pipe[0]);
    if (in_pipe[1] >= 0) ::close(in_pipe[1]);
    return errno_status("fork", fork_errno);
  }
  ::setpgid(pid, pid);  // also in the child: whichever runs first, signals find the group
  int exec_errno = 0;
  ssize_t n;
  do n = ::read(err_pipe[0], &exec_errno, sizeof exec_errno);
  while (n < 0 && errno == EINTR);
  ::close(err_pipe[0]);
  if (in_pipe[1] >= 0) {
    if (n == 0) (void)!::write(in_pipe[1], w.stdin_data.data(), w.stdin_data.size());
    ::close(in_pipe[1]);
  }
  if (n > 0) {
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return not_found("cannot run '" + w.argv[0] + "': " + std::strerror(exec_errno));
  }
  return pid;
}

std::string plural_workers(size_t n) {
  return std::to_string(n) + (n == 1 ? " worker" : " workers");
}

struct Child {
  pid_t pid = -1;
  bool running = false;
  int status = 0;  // waitpid status once reaped
};

class Job {
 public:
  Job(const std::vector<WorkerSpec>& workers, const SupervisorOptions& options, SignalPipe& pipe)
      : workers_(workers), options_(options), pipe_(pipe), children_(workers.size()) {}

  int run() {
    Status started = start_all();
    if (!started.ok()) {
      stopped_count_ = running_count();
      spawn_error_ = started.message();
      if (stopped_count_ > 0) stop(SIGTERM);
    }
    wait_loop();
    return report();
  }

 private:
  Status start_all() {
    for (size_t i = 0; i < workers_.size(); ++i) {
      StatusOr<pid_t> pid = spawn(workers_[i]);
      if (!pid.ok()) {
        spawn_failed_rank_ = static_cast<int>(i);
        return pid.status();
      }
      children_[i].pid = *pid;
      children_[i].running = true;
    }
    return ok_status();
  }

  size_t running_count() const {
    size_t n = 0;
    for (const Child& c : children_) n += c.running;
    return n;
  }

  void signal_running(int sig) {
    for (size_t i = 0; i < children_.size(); ++i) {
      if (!children_[i].running) continue;
      if (::kill(-children_[i].pid, sig) != 0) ::kill(children_[i].pid, sig);
      if (sig == SIGKILL) sigkilled_ranks_.push_back(static_cast<int>(i));
    }
  }

  void stop(int sig) {
    signal_running(sig);
    stopping_ = true;
    const double grace_s = std::clamp(options_.grace_period_s, 0.0, kMaxGraceS);
    deadline_ = Clock::now() +
                std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace_s));
  }

  void escalate(bool by_signal) {
    signal_running(SIGKILL);
    killed_ = true;
    killed_by_signal_ = by_signal;
  }

  void on_launcher_signal(int sig) {
    if (stopping_) {  // a second Ctrl-C, or one during a stop: do not wait out the grace
      if (!killed_) escalate(/*by_signal=*/true);
      return;
    }
    interrupted_by_ = sig;
    stopped_count_ = running_count();
    stop(sig);
  }

  void reap() {
    for (size_t i = 0; i < children_.size(); ++i) {
      Child& c = children_[i];
      if (!c.running) continue;
      pid_t r = ::waitpid(c.pid, &c.status, WNOHANG);
      if (r == 0 || (r < 0 && errno == EINTR)) continue;
      c.running = false;
      if (r < 0) c.status = 0;  // reaped by someone else (ECHILD): nothing to report
      bool failed = !(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0);
      if (failed && !stopping_) {
        failed_rank_ = static_cast<int>(i);
        stopped_count_ = running_count();
        stop(SIGTERM);
      }
    }
  }

  void wait_loop() {
    reap();
    while (running_count() > 0) {
      int timeout_ms = -1;
      if (stopping_ && !killed_) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
        if (left.count() <= 0) {
          escalate(/*by_signal=*/false);
          continue;
        }
        timeout_ms = static_cast<int>(std::min<int64_t>(left.count() + 1, kMaxPollMs));
      }
      struct pollfd p = {pipe_.read_fd(), POLLIN, 0};
      ::poll(&p, 1, timeout_ms);  // EINTR or timeout: just re-check below
      for (int sig : pipe_.drain()) on_launcher_signal(sig);
      reap();
    }
  }

  std::string killed_suffix() const {
    if (sigkilled_ranks_.empty()) return "";
    std::string ranks;
    for (int r : sigkilled_ranks_) {
      if (!ranks.empty()) ranks += ',';
      ranks += std::to_string(r);
    }
    if (killed_by_signal_)
      return " (SIGKILL on another signal to the launcher: rank " + ranks + ")";
    char grace[32];
    std::snprintf(grace, sizeof grace, "%g", options_.grace_period_s);
    return " (SIGKILL after the " + std::string(grace) + " s grace period: rank " + ranks + ")";
  }

  int report() const {
    std::string line;
    int code = 0;
    std::string others = stopped_count_ == 0
                             ? "no other worker was running"
                             : "stopped the other " + plural_workers(stopped_count_);
    if (!spawn_error_.empty()) {
      const WorkerSpec& w = workers_[spawn_failed_rank_];
      line =
          spawn_error_ + " (rank " + std::to_string(w.rank) + ", host " + w.host + "); " + others;
      code = 127;
    } else if (failed_rank_ >= 0) {
      const WorkerSpec& w = workers_[failed_rank_];
      int st = children_[failed_rank_].status;
      line = "rank " + std::to_string(w.rank) + " (host " + w.host + ", local rank " +
             std::to_string(w.local_rank) + ") ";
      if (WIFSIGNALED(st)) {
        line += "was killed by signal " + std::to_string(WTERMSIG(st)) + " (" +
                signal_name(WTERMSIG(st)) + ")";
        code = 128 + WTERMSIG(st);
      } else {
        line += "exited with status " + std::to_string(WEXITSTATUS(st));
        code = WEXITSTATUS(st);
      }
      line += "; " + others;
    } else if (interrupted_by_ > 0) {
      line = "received " + signal_name(interrupted_by_) + "; stopped " +
             plural_workers(stopped_count_);
      code = 128 + interrupted_by_;
    }
    if (!line.empty())
      std::fprintf(stderr, "zerotrain run: %s%s\n", line.c_str(), killed_suffix().c_str());
    std::fflush(stderr);
    return code;
  }

  const std::vector<WorkerSpec>& workers_;
  SupervisorOptions options_;
  SignalPipe& pipe_;
  std::vector<Child> children_;
  bool stopping_ = false, killed_ = false, killed_by_signal_ = false;
  Clock::time_point deadline_;
  int failed_rank_ = -1, spawn_failed_rank_ = -1, interrupted_by_ = 0;
  size_t stopped_count_ = 0;
  std::string spawn_error_;
  std::vector<int> sigkilled_ranks_;
};

}  // namespace

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

int supervise(const std::vector<WorkerSpec>& workers, const SupervisorOptions& options) {
  if (workers.empty()) return 0;
  SignalPipe pipe;  // before the first fork, so no SIGCHLD is missed
  Job job(workers, options, pipe);
  return job.run();
}

}  // namespace zerotrain::launch
