// Subprocess: posix_spawn with stdout/stderr redirected to temporary files.
#include "integration/subprocess.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace zerotrain::testing {
namespace {

std::string make_temp_path(const char* tag) {
  std::string pattern = std::string("/tmp/zt_") + tag + "_XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  int fd = ::mkstemp(buf.data());
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  ::close(fd);
  return buf.data();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

Subprocess::Subprocess(const std::vector<std::string>& argv,
                       const std::vector<std::string>& extra_env) {
  out_path_ = make_temp_path("out");
  err_path_ = make_temp_path("err");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path_.c_str(), O_WRONLY | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(), O_WRONLY | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);

  // "K=V" entries override or add; a bare "K" removes K.
  std::vector<std::string> env_strings;
  auto overridden = [&](const std::string& entry) {
    std::string name = entry.substr(0, entry.find('='));
    for (const std::string& kv : extra_env)
      if (kv.substr(0, kv.find('=')) == name) return true;
    return false;
  };
  for (char** e = environ; *e != nullptr; ++e)
    if (!overridden(*e)) env_strings.emplace_back(*e);
  for (const std::string& kv : extra_env)
    if (kv.find('=') != std::string::npos) env_strings.push_back(kv);
  std::vector<char*> envp, args;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  start_ = std::chrono::steady_clock::now();
  int rc = ::posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error(std::string("posix_spawnp: ") + std::strerror(rc));
}

Subprocess::~Subprocess() {
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  ::unlink(out_path_.c_str());
  ::unlink(err_path_.c_str());
}

ProcessResult Subprocess::wait(std::chrono::duration<double> timeout) {
  ProcessResult result;
  auto deadline = start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout);
  int status = 0;
  while (true) {
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      result.timed_out = true;
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  reaped_ = true;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = slurp(out_path_);
  result.err = slurp(err_path_);
  return result;
}

std::map<int, int> workers_by_rank(int parent) {
  std::map<int, int> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent* e = ::readdir(proc)) {
    int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(line.substr(close + 2));
    std::string state;
    int ppid = 0;
    fields >> state >> ppid;
    if (ppid != parent) continue;
    std::ifstream env("/proc/" + std::to_string(pid) + "/environ");
    std::string var;
    while (std::getline(env, var, '\0'))
      if (var.rfind("RANK=", 0) == 0) out[std::atoi(var.c_str() + 5)] = pid;
  }
  ::closedir(proc);
  return out;
}

bool process_running(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

ProcessResult run_process(const std::vector<std::string>& argv,
                          std::chrono::duration<double> timeout,
                          const std::vector<std::string>& extra_env) {
  Subprocess p(argv, extra_env);
  return p.wait(timeout);
}

}  // namespace zerotrain::testing
