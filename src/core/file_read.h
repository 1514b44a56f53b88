// pread_exact: exactly `size` bytes at `offset` of an open file, retrying
// short reads and EINTR; a file that ends first is Corruption, an OS error
// IoError, both naming `what` (e.g. "checkpoint shard PATH").
//
//   ZT_RETURN_IF_ERROR(pread_exact(fd, buf, n, offset, "safetensors file " + path));
//
// Thread-safety: pread does not move the file offset; concurrent calls on
// one fd are safe.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace zerotrain {

Status pread_exact(int fd, void* out, int64_t size, int64_t offset, const std::string& what);

}  // namespace zerotrain
