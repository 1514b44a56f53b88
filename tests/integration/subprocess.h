// Test utility: run a command as a child process with captured stdout and
// stderr and a hard deadline, so end-to-end tests of the `zerotrain` binary
// can assert exit codes, messages and how long a failure took to surface.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace zerotrain::testing {

struct ProcessResult {
  int exit_code = -1;      // exit status, or 128 + signal
  bool timed_out = false;  // the deadline passed and the child was killed
  std::string out, err;
  double seconds = 0;
};

class Subprocess {
 public:
  // Starts argv[0] (searched on PATH) with the current environment changed
  // by `extra_env`: "K=V" sets K, a bare "K" removes it.
  Subprocess(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env = {});
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  int pid() const { return pid_; }
  // Waits until exit or until `timeout` passes (then SIGKILLs the child).
  ProcessResult wait(std::chrono::duration<double> timeout);

 private:
  int pid_ = -1;
  std::string out_path_, err_path_;
  std::chrono::steady_clock::time_point start_;
  bool reaped_ = false;
};

// Children of `parent` (pid) keyed by their RANK environment variable, read
// from /proc, so tests of `zerotrain run` need nothing from the workers.
std::map<int, int> workers_by_rank(int parent);

// Alive and not a zombie waiting to be reaped.
bool process_running(int pid);

// Convenience: start, wait, return.
ProcessResult run_process(const std::vector<std::string>& argv,
                          std::chrono::duration<double> timeout,
                          const std::vector<std::string>& extra_env = {});

}  // namespace zerotrain::testing
