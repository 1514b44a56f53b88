// AtomicFile: temporary file, fsync, rename, fsync of the directory.
#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <utility>

namespace zerotrain {

StatusOr<AtomicFile> AtomicFile::create(const std::string& path) {
  AtomicFile f;
  f.path_ = path;
  f.tmp_ = path + ".tmp." + std::to_string(::getpid());
  f.fd_ = ::open(f.tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (f.fd_ < 0) return errno_status("create " + f.tmp_, errno);
  return f;
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept { *this = std::move(other); }

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    discard();
    path_ = std::move(other.path_);
    tmp_ = std::move(other.tmp_);
    fd_ = std::exchange(other.fd_, -1);
    written_ = std::exchange(other.written_, 0);
  }
  return *this;
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
    fd_ = -1;
  }
}

Status AtomicFile::write(const void* data, size_t size) {
  if (fd_ < 0) return internal_error("write to " + path_ + " after commit or failure");
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      discard();
      return errno_status("write " + tmp_, err);
    }
    p += n;
    size -= static_cast<size_t>(n);
    written_ += n;
  }
  return ok_status();
}

Status AtomicFile::commit() {
  if (fd_ < 0) return internal_error("commit of " + path_ + " after commit or failure");
  if (::fsync(fd_) != 0) {
    const int err = errno;
    discard();
    return errno_status("fsync " + tmp_, err);
  }
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    return errno_status("close " + tmp_, err);
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    return errno_status("rename " + tmp_ + " to " + path_, err);
  }
  std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  return fsync_directory(parent.empty() ? "." : parent.string());
}

Status atomic_write_file(const std::string& path, std::string_view bytes) {
  ZT_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::create(path));
  ZT_RETURN_IF_ERROR(f.write(bytes.data(), bytes.size()));
  return f.commit();
}

Status fsync_directory(const std::string& dir) {
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return errno_status("open directory " + dir, errno);
  Status st;
  if (::fsync(dfd) != 0) st = errno_status("fsync directory " + dir, errno);
  ::close(dfd);
  return st;
}

}  // namespace zerotrain
