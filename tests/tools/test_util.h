// Test helpers for tools/: a temporary directory, and a forked child that
// holds files open and mapped (a stand-in for a process holding /dev/nvidia*).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

namespace zerotrain::tools {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/zt_tools_XXXXXX";
    const char* p = mkdtemp(tmpl);
    EXPECT_NE(p, nullptr);
    path_ = p ? p : "/tmp";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The child opens `open_files`, maps `mapped_files` (then closes their
// descriptors, so only the mapping holds them), tells the parent it is
// ready through a pipe, and sleeps until signalled.
class HeldChild {
 public:
  HeldChild(const std::vector<std::string>& open_files,
            const std::vector<std::string>& mapped_files) {
    int ready[2];
    EXPECT_EQ(pipe(ready), 0);
    pid_ = fork();
    if (pid_ == 0) {
      close(ready[0]);
      for (const std::string& f : open_files)
        if (open(f.c_str(), O_RDONLY) < 0) _exit(3);
      for (const std::string& f : mapped_files) {
        const int fd = open(f.c_str(), O_RDONLY);
        if (fd < 0 || mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED) _exit(4);
        close(fd);
      }
      char c = 'r';
      if (write(ready[1], &c, 1) != 1) _exit(5);
      for (;;) pause();
    }
    close(ready[1]);
    char c = 0;
    EXPECT_EQ(read(ready[0], &c, 1), 1) << "child failed to set up";
    close(ready[0]);
  }
  ~HeldChild() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      reap();
    }
  }
  pid_t pid() const { return pid_; }
  // Exit code, or 128 + signal.
  int reap() {
    int status = 0;
    if (waitpid(pid_, &status, 0) != pid_) return -1;
    reaped_ = true;
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

}  // namespace zerotrain::tools
