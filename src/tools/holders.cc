// Scans /proc for processes holding files that match a glob: open
// descriptors through /proc/PID/fd symlinks, mappings through /proc/PID/maps.
#include "tools/holders.h"

#include <dirent.h>
#include <fnmatch.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

namespace zerotrain::tools {
namespace {

struct DirCloser {
  void operator()(DIR* d) const { closedir(d); }
};
using DirPtr = std::unique_ptr<DIR, DirCloser>;

bool all_digits(const char* s) {
  if (*s == '\0') return false;
  for (; *s; ++s)
    if (*s < '0' || *s > '9') return false;
  return true;
}

bool matches(const std::string& pattern, const std::string& path) {
  return fnmatch(pattern.c_str(), path.c_str(), FNM_PATHNAME) == 0;
}

std::string user_name(uid_t uid) {
  struct passwd pw;
  struct passwd* found = nullptr;
  char buf[1024];
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found) return pw.pw_name;
  return std::to_string(uid);
}

std::string command_line(const std::string& dir) {
  std::ifstream in(dir + "/cmdline", std::ios::binary);
  std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!cmd.empty() && cmd.back() == '\0') cmd.pop_back();
  std::replace(cmd.begin(), cmd.end(), '\0', ' ');
  if (!cmd.empty()) return cmd;
  std::ifstream comm(dir + "/comm");
  std::string name;
  std::getline(comm, name);
  return "[" + name + "]";
}

// Open descriptors. False when the fd directory may not be read.
bool scan_fds(const std::string& dir, const std::string& pattern,
              std::map<std::string, HeldFile>* files) {
  DirPtr fds(opendir((dir + "/fd").c_str()));
  if (!fds) return errno != EACCES && errno != EPERM;  // ENOENT: the process just ended
  while (dirent* e = readdir(fds.get())) {
    if (!all_digits(e->d_name)) continue;
    char target[4096];
    const std::string link = dir + "/fd/" + e->d_name;
    const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
    if (n <= 0) continue;
    const std::string path(target, static_cast<size_t>(n));
    if (!matches(pattern, path)) continue;
    HeldFile& f = (*files)[path];
    f.path = path;
    f.open_fd = true;
  }
  return true;
}

// Mapped files: the path is everything after the fifth field of a maps line.
void scan_maps(const std::string& dir, const std::string& pattern,
               std::map<std::string, HeldFile>* files) {
  std::ifstream maps(dir + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, perms, offset, dev, inode;
    if (!(fields >> range >> perms >> offset >> dev >> inode)) continue;
    std::string path;
    std::getline(fields >> std::ws, path);
    if (path.empty() || path[0] != '/') continue;
    constexpr std::string_view kDeleted = " (deleted)";
    if (path.size() > kDeleted.size() && path.ends_with(kDeleted))
      path.resize(path.size() - kDeleted.size());
    if (!matches(pattern, path)) continue;
    HeldFile& f = (*files)[path];
    f.path = path;
    f.mapped = true;
  }
}

}  // namespace

StatusOr<HolderScan> find_holders(const HoldersOptions& options) {
  DirPtr proc(opendir(options.proc_root.c_str()));
  if (!proc) return errno_status("listing " + options.proc_root, errno);
  const pid_t self = getpid();
  HolderScan scan;
  while (dirent* e = readdir(proc.get())) {
    if (!all_digits(e->d_name)) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(e->d_name));
    if (pid == self) continue;
    const std::string dir = options.proc_root + "/" + e->d_name;
    std::map<std::string, HeldFile> files;
    if (!scan_fds(dir, options.pattern, &files)) {
      ++scan.unreadable;
      continue;
    }
    scan_maps(dir, options.pattern, &files);
    if (files.empty()) continue;
    Holder h;
    h.pid = pid;
    struct stat st;
    h.user = stat(dir.c_str(), &st) == 0 ? user_name(st.st_uid) : "?";
    h.command = command_line(dir);
    for (auto& [path, f] : files) h.files.push_back(std::move(f));
    scan.holders.push_back(std::move(h));
  }
  std::sort(scan.holders.begin(), scan.holders.end(),
            [](const Holder& a, const Holder& b) { return a.pid < b.pid; });
  return scan;
}

}  // namespace zerotrain::tools
