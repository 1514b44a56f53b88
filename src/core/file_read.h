// pread_exact: exactly `size` bytes at `offset` of an open file, retrying
// short reads and EINTR; a file that ends first is Corruption, an OS error
// IoError, both naming `what` (e.g. "checkpoint shard PATH").
// read_text_file: a whole (small) file: NotFound when it does not exist,
// IoError when it cannot be opened or read, both naming the path.
//
//   ZT_RETURN_IF_ERROR(pread_exact(fd, buf, n, offset, "safetensors file " + path));
//   ZT_ASSIGN_OR_RETURN(std::string text, read_text_file(dir + "/config.json"));
//
// Thread-safety: pread does not move the file offset; concurrent calls on
// one fd are safe.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace zerotrain {

Status pread_exact(int fd, void* out, int64_t size, int64_t offset, const std::string& what);
StatusOr<std::string> read_text_file(const std::string& path);

}  // namespace zerotrain
