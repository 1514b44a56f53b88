// AtomicFile: a file that appears at its path whole or not at all. Bytes go
// to "PATH.tmp.PID" in the same directory; commit() fsyncs it, renames it
// over PATH and fsyncs the directory, so a crash (or SIGKILL) at any moment
// leaves either the previous PATH or the new one, never a torn file.
// Destroyed without commit(), it removes the temporary file.
//
//   ZT_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::create(dir + "/manifest.json"));
//   ZT_RETURN_IF_ERROR(f.write(text.data(), text.size()));
//   ZT_RETURN_IF_ERROR(f.commit());
//
// Thread-safety: one owner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace zerotrain {

class AtomicFile {
 public:
  static StatusOr<AtomicFile> create(const std::string& path);
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  Status write(const void* data, size_t size);
  // Bytes written so far.
  int64_t size() const { return written_; }
  // fsync, rename over the final path, fsync the directory.
  Status commit();
  const std::string& path() const { return path_; }

 private:
  AtomicFile() = default;
  void discard();

  std::string path_, tmp_;
  int fd_ = -1;
  int64_t written_ = 0;
};

// The whole of `bytes` to `path`, atomically.
Status atomic_write_file(const std::string& path, std::string_view bytes);

// fsync of a directory (after creating or renaming entries in it).
Status fsync_directory(const std::string& dir);

}  // namespace zerotrain
