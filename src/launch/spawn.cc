// Worker process start-up: fork/exec into an own process group. See spawn.h.
#include "launch/spawn.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "launch/signals.h"

extern char** environ;  // inherited by workers; read-only copy, not a variable lookup

namespace zerotrain::launch {
namespace {

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
  if (::getppid() != launcher) ::_exit(127);  // the launcher died before prctl
  reset_signals_in_child();
  if (stdin_fd == STDIN_FILENO)
    ::fcntl(stdin_fd, F_SETFD, 0);  // dup2 onto itself would keep O_CLOEXEC
  else
    ::dup2(stdin_fd, STDIN_FILENO);
  ::execvpe(img.argv[0], img.argv.data(), img.envp.data());
  int err = errno;
  (void)!::write(err_fd, &err, sizeof err);
  ::_exit(127);
}

}  // namespace

// A failed exec is reported through the error pipe; a successful one closes
// it (O_CLOEXEC), so the read returns 0 then.
StatusOr<pid_t> spawn_worker(const WorkerSpec& w) {
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

}  // namespace zerotrain::launch
