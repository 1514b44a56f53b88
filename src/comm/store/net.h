// Internal to comm/: TCP socket helpers with deadlines, the framed binary
// wire format of the TCP store, and a constant-time string comparison.
// Frames are a little-endian u32 payload length followed by the payload; a
// payload is a u8 opcode/status then fields (u32-length strings, i64).
//
//   WireWriter w(StoreOp::kSet); w.put_str(key); w.put_str(value);
//   ZT_RETURN_IF_ERROR(write_all(fd, w.frame(), deadline, "store at " + addr));
//
// Thread-safety: functions are stateless; a socket must be used by one
// thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace zerotrain::comm::net {

using Clock = std::chrono::steady_clock;

enum class StoreOp : uint8_t {
  kHello = 1,    // secret
  kSet = 2,      // key, value
  kGet = 3,      // key, timeout_ms           -> value
  kAdd = 4,      // key, delta                -> i64
  kWait = 5,     // n, keys..., timeout_ms    -> (on timeout) n, missing keys...
  kMissing = 6,  // n, keys...                -> n, missing keys...
  kErase = 7,    // key                       -> u8 existed
};

enum class Reply : uint8_t { kOk = 0, kTimeout = 1, kRefused = 2, kBadRequest = 3 };

// Largest frame accepted; an unauthenticated peer may send at most
// kMaxHelloBytes before it is dropped.
inline constexpr uint32_t kMaxFrameBytes = 256u << 20;
inline constexpr uint32_t kMaxHelloBytes = 4096;

class WireWriter {
 public:
  explicit WireWriter(uint8_t tag) {
    buf_.resize(4);
    buf_.push_back(static_cast<char>(tag));
  }
  void put_u8(uint8_t v) { buf_.push_back(static_cast<char>(v)); }
  void put_i64(int64_t v);
  void put_str(std::string_view s);
  void put_strs(const std::vector<std::string>& v);
  // The whole frame, length prefix filled in.
  const std::string& frame();

 private:
  std::string buf_;
};

class WireReader {
 public:
  explicit WireReader(std::string_view payload) : data_(payload) {}
  bool get_u8(uint8_t* v);
  bool get_i64(int64_t* v);
  bool get_str(std::string* s);
  bool get_strs(std::vector<std::string>* v);
  bool at_end() const { return pos_ == data_.size(); }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

// Compares in time that depends only on the lengths, not on where a and b
// first differ, so a remote guesser learns nothing from reply latency.
bool constant_time_equal(std::string_view a, std::string_view b);

// Listening socket on host:port (empty host: all IPv4 interfaces; port 0:
// any free port). *bound_port receives the actual port.
StatusOr<int> tcp_listen(const std::string& host, int port, int* bound_port);
// One connection attempt to host:port, bounded by `deadline`. Returns a
// non-blocking socket with TCP_NODELAY.
StatusOr<int> tcp_connect(const std::string& host, int port, Clock::time_point deadline);
void set_nonblocking(int fd);

// Blocking-with-deadline I/O on a non-blocking socket; `who` names the peer
// in errors ("store at 127.0.0.1:29500"). EOF gives Unavailable.
Status write_all(int fd, std::string_view data, Clock::time_point deadline, const std::string& who);
Status read_exact(int fd, char* out, size_t n, Clock::time_point deadline, const std::string& who);
// Reads one frame's payload (no size larger than max_bytes).
StatusOr<std::string> read_frame(int fd, Clock::time_point deadline, const std::string& who,
                                 uint32_t max_bytes = kMaxFrameBytes);

}  // namespace zerotrain::comm::net
