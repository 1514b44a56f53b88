// Worker supervision: the stop/escalate state machine over spawn_worker()
// and the SignalPipe. See supervisor.h.
#include "launch/supervisor.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>

#include "launch/signals.h"
#include "launch/spawn.h"

namespace zerotrain::launch {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kMaxPollMs = 3600 * 1000;  // poll() takes an int; re-armed each loop
constexpr double kMaxGraceS = 1e7;           // keeps the deadline arithmetic finite

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

  SupervisedJob run() {
    Status started = start_all();
    if (!started.ok()) {
      stopped_count_ = running_count();
      spawn_error_ = started.message();
      if (stopped_count_ > 0) stop(SIGTERM);
    }
    wait_loop();
    const int code = report();
    const JobEnd end = !spawn_error_.empty() ? JobEnd::kSpawnFailed
                       : failed_rank_ >= 0   ? JobEnd::kWorkerFailed
                       : interrupted_by_ > 0 ? JobEnd::kInterrupted
                                             : JobEnd::kSucceeded;
    return {code, end};
  }

 private:
  Status start_all() {
    for (size_t i = 0; i < workers_.size(); ++i) {
      StatusOr<pid_t> pid = spawn_worker(workers_[i]);
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
      if (sig == SIGKILL) sigkilled_ranks_.push_back(workers_[i].rank);
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

  // Ctrl-Z: the terminal stops only our process group, so stop the workers
  // too, then ourselves; `fg`/`bg` (SIGCONT) resumes us and we resume them.
  void suspend() {
    signal_running(SIGTSTP);
    ::kill(::getpid(), SIGSTOP);  // returns once we are continued
    signal_running(SIGCONT);
  }

  void on_launcher_signal(int sig) {
    if (sig == SIGTSTP) {
      if (!stopping_) suspend();  // while stopping, finishing matters more
      return;
    }
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
      } else if (failed_rank_ >= 0 && external_signal(c.status) &&
                 !WIFSIGNALED(children_[failed_rank_].status)) {
        // A killed rank's peers see its sockets close and may exit (status
        // 1) before its own death is reaped: the signal is the root cause.
        failed_rank_ = static_cast<int>(i);
        stopped_count_ = running_count();
      }
    }
  }

  // Killed by a signal the launcher did not send (its SIGTERM on a stop,
  // its SIGKILL on escalation).
  bool external_signal(int status) const {
    if (!WIFSIGNALED(status)) return false;
    int sig = WTERMSIG(status);
    return sig != SIGTERM && !(killed_ && sig == SIGKILL);
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
      // rank -1: a cluster launcher (mpirun, srun, ...) carrying the whole job.
      line = w.rank < 0 ? "the job's launcher " + w.argv.front() + " "
                        : "rank " + std::to_string(w.rank) + " (host " + w.host + ", local rank " +
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

SupervisedJob supervise_job(const std::vector<WorkerSpec>& workers,
                            const SupervisorOptions& options) {
  if (workers.empty()) return {};
  SignalPipe pipe;  // before the first fork, so no SIGCHLD is missed
  Job job(workers, options, pipe);
  return job.run();
}

int supervise(const std::vector<WorkerSpec>& workers, const SupervisorOptions& options) {
  return supervise_job(workers, options).code;
}

}  // namespace zerotrain::launch
