// pread_exact: a pread loop over short reads and EINTR; read_text_file.
#include "core/file_read.h"

#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace zerotrain {

Status pread_exact(int fd, void* out, int64_t size, int64_t offset, const std::string& what) {
  char* p = static_cast<char*>(out);
  while (size > 0) {
    const ssize_t n = ::pread(fd, p, static_cast<size_t>(size), offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_status("read " + what, errno);
    }
    if (n == 0) {
      return corruption(what + ": ends at byte " + std::to_string(offset) + ", " +
                        std::to_string(size) + " bytes short (truncated, or it shrank after open)");
    }
    p += n;
    size -= n;
    offset += n;
  }
  return ok_status();
}

StatusOr<std::string> read_text_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return not_found(path + ": no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error(path + ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return io_error(path + ": read failed");
  return s.str();
}

}  // namespace zerotrain
