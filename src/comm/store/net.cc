// TCP helpers and wire encoding for the rendezvous store.
#include "comm/store/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace zerotrain::comm::net {
namespace {

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > 1 << 30 ? 1 << 30 : static_cast<int>(left.count());
}

// Waits for `events` on fd; Timeout at the deadline.
Status wait_fd(int fd, short events, Clock::time_point deadline, const std::string& who) {
  for (;;) {
    pollfd p{fd, events, 0};
    int ms = remaining_ms(deadline);
    int rc = ::poll(&p, 1, ms);
    if (rc > 0) return ok_status();
    if (rc == 0) return timeout_error(who + " did not answer in time");
    if (errno != EINTR) return errno_status("poll on " + who, errno);
  }
}

}  // namespace

void WireWriter::put_i64(int64_t v) {
  uint64_t u = static_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) buf_.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}

void WireWriter::put_str(std::string_view s) {
  uint32_t n = static_cast<uint32_t>(s.size());
  for (int i = 0; i < 4; ++i) buf_.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  buf_.append(s);
}

void WireWriter::put_strs(const std::vector<std::string>& v) {
  put_i64(static_cast<int64_t>(v.size()));
  for (const std::string& s : v) put_str(s);
}

const std::string& WireWriter::frame() {
  uint32_t n = static_cast<uint32_t>(buf_.size() - 4);
  for (int i = 0; i < 4; ++i) buf_[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return buf_;
}

bool WireReader::get_u8(uint8_t* v) {
  if (pos_ + 1 > data_.size()) return false;
  *v = static_cast<uint8_t>(data_[pos_++]);
  return true;
}

bool WireReader::get_i64(int64_t* v) {
  if (pos_ + 8 > data_.size()) return false;
  uint64_t u = 0;
  for (int i = 0; i < 8; ++i)
    u |= static_cast<uint64_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
  pos_ += 8;
  *v = static_cast<int64_t>(u);
  return true;
}

bool WireReader::get_str(std::string* s) {
  if (pos_ + 4 > data_.size()) return false;
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i)
    n |= static_cast<uint32_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
  pos_ += 4;
  if (n > data_.size() - pos_) return false;
  s->assign(data_.substr(pos_, n));
  pos_ += n;
  return true;
}

bool WireReader::get_strs(std::vector<std::string>* v) {
  int64_t n = 0;
  if (!get_i64(&n) || n < 0 || static_cast<uint64_t>(n) > data_.size()) return false;
  v->resize(static_cast<size_t>(n));
  for (std::string& s : *v)
    if (!get_str(&s)) return false;
  return true;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Length is not secret (it only says how long the job's secret is); the
  // content comparison touches every byte of b whatever a holds.
  volatile unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < b.size(); ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    diff = diff | (x ^ static_cast<unsigned char>(b[i]));
  }
  return diff == 0;
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

StatusOr<int> tcp_listen(const std::string& host, int port, int* bound_port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno_status("socket()", errno);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  if (!host.empty() && ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    ::close(fd);
    return invalid_argument("store listen address '" + host + "' is not an IPv4 address");
  }
  std::string where = (host.empty() ? "0.0.0.0" : host) + ":" + std::to_string(port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    ::close(fd);
    return errno_status("bind store to " + where, err);
  }
  if (::listen(fd, 1024) != 0) {
    int err = errno;
    ::close(fd);
    return errno_status("listen on " + where, err);
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *bound_port = ntohs(addr.sin_port);
  set_nonblocking(fd);
  return fd;
}

StatusOr<int> tcp_connect(const std::string& host, int port, Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  int gai = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (gai != 0)
    return unavailable("cannot resolve store host '" + host + "': " + ::gai_strerror(gai));
  Status last = unavailable("no address for " + host);
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = ::poll(&p, 1, remaining_ms(deadline));
      int err = rc > 0 ? 0 : ETIMEDOUT;
      socklen_t len = sizeof(err);
      if (rc > 0) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      errno = err;
      rc = err == 0 ? 0 : -1;
    }
    if (rc == 0) {
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      ::freeaddrinfo(res);
      return fd;
    }
    last = unavailable(std::string(std::strerror(errno)));
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return last;
}

Status write_all(int fd, std::string_view data, Clock::time_point deadline,
                 const std::string& who) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      ZT_RETURN_IF_ERROR(wait_fd(fd, POLLOUT, deadline, who));
      continue;
    }
    return unavailable(who + " closed the connection (" + std::strerror(errno) + ")");
  }
  return ok_status();
}

Status read_exact(int fd, char* out, size_t n, Clock::time_point deadline, const std::string& who) {
  size_t done = 0;
  while (done < n) {
    ssize_t got = ::recv(fd, out + done, n - done, 0);
    if (got > 0) {
      done += static_cast<size_t>(got);
      continue;
    }
    if (got == 0) return unavailable(who + " closed the connection");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      ZT_RETURN_IF_ERROR(wait_fd(fd, POLLIN, deadline, who));
      continue;
    }
    return unavailable(who + " closed the connection (" + std::strerror(errno) + ")");
  }
  return ok_status();
}

StatusOr<std::string> read_frame(int fd, Clock::time_point deadline, const std::string& who,
                                 uint32_t max_bytes) {
  unsigned char len_bytes[4];
  ZT_RETURN_IF_ERROR(read_exact(fd, reinterpret_cast<char*>(len_bytes), 4, deadline, who));
  uint32_t len = len_bytes[0] | (len_bytes[1] << 8) | (len_bytes[2] << 16) |
                 (static_cast<uint32_t>(len_bytes[3]) << 24);
  if (len == 0 || len > max_bytes)
    return corruption(who + " sent a frame of " + std::to_string(len) + " bytes");
  std::string payload(len, '\0');
  ZT_RETURN_IF_ERROR(read_exact(fd, payload.data(), len, deadline, who));
  return payload;
}

}  // namespace zerotrain::comm::net
