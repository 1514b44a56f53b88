// TcpStoreServer: one poll() thread, a table of keys, parked get/wait
// requests answered when keys appear or deadlines pass.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "comm/store/net.h"
#include "comm/store/tcp_store.h"
#include "core/log.h"

namespace zerotrain::comm {

using net::Clock;
using net::Reply;
using net::StoreOp;
using net::WireReader;
using net::WireWriter;

class TcpStoreServer::Loop {
 public:
  Loop(int listen_fd, int wake_fd, std::string secret, std::atomic<int>* refused)
      : listen_fd_(listen_fd), wake_fd_(wake_fd), secret_(std::move(secret)), refused_(refused) {}
  ~Loop();
  void run();

 private:
  struct Conn {
    std::string in, out;
    bool authed = false;
    bool blocked = false;  // a get/wait is parked; later frames wait
    bool closing = false;  // close once `out` is flushed
  };
  struct Waiter {
    int fd;
    StoreOp op;
    std::vector<std::string> keys;
    Clock::time_point deadline;
  };

  void accept_all();
  void read_conn(int fd, Conn& c);
  void process(int fd, Conn& c);
  void handle(int fd, Conn& c, std::string_view payload);
  void handle_authed(int fd, Conn& c, StoreOp op, WireReader& r);
  void park_or_answer(int fd, Conn& c, StoreOp op, std::vector<std::string> keys, int64_t ms);
  bool answer_if_ready(const Waiter& w, bool expired);
  void wake_waiters(bool expire_only);
  void send(int fd, Conn& c, WireWriter& w);
  void flush(int fd, Conn& c);
  void close_conn(int fd);
  int poll_timeout_ms() const;

  int listen_fd_, wake_fd_;
  std::string secret_;
  std::atomic<int>* refused_;
  std::map<int, Conn> conns_;
  std::vector<Waiter> waiters_;
  KeyValueTable table_;
};

TcpStoreServer::Loop::~Loop() {
  for (auto& [fd, c] : conns_) ::close(fd);
  ::close(listen_fd_);
  ::close(wake_fd_);
}

void TcpStoreServer::Loop::run() {
  std::vector<pollfd> fds;
  for (;;) {
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (auto& [fd, c] : conns_)
      fds.push_back({fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
    int rc = ::poll(fds.data(), fds.size(), poll_timeout_ms());
    if (rc < 0 && errno != EINTR) {
      log::error("store server: poll failed: ", errno);
      return;
    }
    if (fds[0].revents != 0) return;  // stop() wrote to the wake pipe
    if (fds[1].revents & POLLIN) accept_all();
    for (size_t i = 2; i < fds.size(); ++i) {
      int fd = fds[i].fd;
      short events = fds[i].revents;
      if (events == 0) continue;
      // Look the connection up again after each step: handlers may close it.
      if ((events & POLLOUT) && conns_.count(fd)) flush(fd, conns_[fd]);
      if ((events & (POLLIN | POLLHUP | POLLERR)) && conns_.count(fd)) read_conn(fd, conns_[fd]);
    }
    wake_waiters(/*expire_only=*/true);
  }
}

void TcpStoreServer::Loop::accept_all() {
  for (;;) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    conns_[fd] = Conn{};
  }
}

void TcpStoreServer::Loop::read_conn(int fd, Conn& c) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      c.in.append(buf, static_cast<size_t>(n));
      // An unauthenticated peer gets only a small allowance.
      if (!c.authed && c.in.size() > net::kMaxHelloBytes + 4) return close_conn(fd);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    return close_conn(fd);  // EOF or error: the client went away
  }
  process(fd, c);
}

void TcpStoreServer::Loop::process(int fd, Conn& c) {
  while (!c.blocked && !c.closing && c.in.size() >= 4) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(c.in.data());
    uint32_t len = p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
    uint32_t limit = c.authed ? net::kMaxFrameBytes : net::kMaxHelloBytes;
    if (len == 0 || len > limit) return close_conn(fd);
    if (c.in.size() < 4 + static_cast<size_t>(len)) return;
    std::string payload = c.in.substr(4, len);
    c.in.erase(0, 4 + len);
    handle(fd, c, payload);
    if (conns_.find(fd) == conns_.end()) return;  // closed while handling
  }
}

void TcpStoreServer::Loop::handle(int fd, Conn& c, std::string_view payload) {
  WireReader r(payload);
  uint8_t op = 0;
  r.get_u8(&op);
  if (!c.authed) {
    std::string secret;
    bool ok = op == static_cast<uint8_t>(StoreOp::kHello) && r.get_str(&secret) &&
              net::constant_time_equal(secret, secret_);
    WireWriter w(static_cast<uint8_t>(ok ? Reply::kOk : Reply::kRefused));
    if (ok) {
      c.authed = true;
    } else {
      refused_->fetch_add(1);
      c.closing = true;
      log::warn("store server: refused a client that did not present the job secret");
    }
    return send(fd, c, w);
  }
  handle_authed(fd, c, static_cast<StoreOp>(op), r);
}

void TcpStoreServer::Loop::handle_authed(int fd, Conn& c, StoreOp op, WireReader& r) {
  std::string key, value;
  std::vector<std::string> keys;
  int64_t num = 0;
  auto bad = [&](const std::string& why) {
    WireWriter w(static_cast<uint8_t>(Reply::kBadRequest));
    w.put_str(why);
    c.closing = true;
    send(fd, c, w);
  };
  switch (op) {
    case StoreOp::kSet: {
      if (!r.get_str(&key) || !r.get_str(&value)) return bad("malformed set");
      table_.set(key, std::move(value));
      WireWriter w(static_cast<uint8_t>(Reply::kOk));
      send(fd, c, w);
      return wake_waiters(false);
    }
    case StoreOp::kAdd: {
      if (!r.get_str(&key) || !r.get_i64(&num)) return bad("malformed add");
      StatusOr<int64_t> sum = table_.add(key, num);
      WireWriter w(static_cast<uint8_t>(sum.ok() ? Reply::kOk : Reply::kBadRequest));
      if (sum.ok()) w.put_i64(*sum);
      if (!sum.ok()) w.put_str(sum.status().message());
      send(fd, c, w);
      return wake_waiters(false);
    }
    case StoreOp::kGet:
      if (!r.get_str(&key) || !r.get_i64(&num)) return bad("malformed get");
      return park_or_answer(fd, c, op, {key}, num);
    case StoreOp::kWait:
      if (!r.get_strs(&keys) || !r.get_i64(&num)) return bad("malformed wait");
      return park_or_answer(fd, c, op, std::move(keys), num);
    case StoreOp::kMissing: {
      if (!r.get_strs(&keys)) return bad("malformed missing_keys");
      WireWriter w(static_cast<uint8_t>(Reply::kOk));
      w.put_strs(table_.missing(keys));
      return send(fd, c, w);
    }
    case StoreOp::kErase: {
      if (!r.get_str(&key)) return bad("malformed erase");
      WireWriter w(static_cast<uint8_t>(Reply::kOk));
      w.put_u8(table_.erase(key) ? 1 : 0);
      return send(fd, c, w);
    }
    default:
      return bad("unknown store request " + std::to_string(static_cast<int>(op)));
  }
}

void TcpStoreServer::Loop::park_or_answer(int fd, Conn& c, StoreOp op,
                                          std::vector<std::string> keys, int64_t ms) {
  Waiter w{fd, op, std::move(keys),
           Clock::now() + std::chrono::milliseconds(std::max<int64_t>(ms, 0))};
  if (answer_if_ready(w, /*expired=*/false)) return;
  c.blocked = true;
  waiters_.push_back(std::move(w));
}

// Replies to a parked request if its keys are all present (or it expired).
bool TcpStoreServer::Loop::answer_if_ready(const Waiter& w, bool expired) {
  std::vector<std::string> missing = table_.missing(w.keys);
  if (!missing.empty() && !expired) return false;
  auto it = conns_.find(w.fd);
  if (it == conns_.end()) return true;
  WireWriter out(static_cast<uint8_t>(missing.empty() ? Reply::kOk : Reply::kTimeout));
  if (missing.empty() && w.op == StoreOp::kGet) out.put_str(*table_.find(w.keys[0]));
  if (!missing.empty()) out.put_strs(missing);
  it->second.blocked = false;
  send(w.fd, it->second, out);
  return true;
}

void TcpStoreServer::Loop::wake_waiters(bool expire_only) {
  Clock::time_point now = Clock::now();
  std::vector<Waiter> pending;
  pending.swap(waiters_);
  std::vector<int> unblocked;
  for (Waiter& w : pending) {
    bool expired = now >= w.deadline;
    if ((expire_only && !expired) || !answer_if_ready(w, expired)) {
      waiters_.push_back(std::move(w));
    } else {
      unblocked.push_back(w.fd);
    }
  }
  // Frames that arrived behind a parked request run now.
  for (int fd : unblocked) {
    auto it = conns_.find(fd);
    if (it != conns_.end()) process(fd, it->second);
  }
}

void TcpStoreServer::Loop::send(int fd, Conn& c, WireWriter& w) {
  c.out += w.frame();
  flush(fd, c);
}

void TcpStoreServer::Loop::flush(int fd, Conn& c) {
  while (!c.out.empty()) {
    ssize_t n = ::send(fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    return close_conn(fd);
  }
  if (c.closing) close_conn(fd);
}

void TcpStoreServer::Loop::close_conn(int fd) {
  waiters_.erase(std::remove_if(waiters_.begin(), waiters_.end(),
                                [fd](const Waiter& w) { return w.fd == fd; }),
                 waiters_.end());
  conns_.erase(fd);
  ::close(fd);
}

int TcpStoreServer::Loop::poll_timeout_ms() const {
  if (waiters_.empty()) return -1;
  Clock::time_point next = waiters_.front().deadline;
  for (const Waiter& w : waiters_) next = std::min(next, w.deadline);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms + 1, 0, 1 << 30));
}

StatusOr<std::unique_ptr<TcpStoreServer>> TcpStoreServer::start(
    const TcpStoreServerOptions& options) {
  int port = 0;
  ZT_ASSIGN_OR_RETURN(int listen_fd, net::tcp_listen(options.host, options.port, &port));
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    int err = errno;
    ::close(listen_fd);
    return errno_status("pipe for the store server", err);
  }
  std::unique_ptr<TcpStoreServer> server(new TcpStoreServer());
  server->port_ = port;
  server->wake_write_fd_ = pipe_fds[1];
  server->loop_ = std::make_unique<Loop>(listen_fd, pipe_fds[0], options.secret, &server->refused_);
  server->thread_ = std::thread([loop = server->loop_.get()] { loop->run(); });
  return server;
}

void TcpStoreServer::stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (!thread_.joinable()) return;
  char byte = 1;
  (void)!::write(wake_write_fd_, &byte, 1);
  thread_.join();
  loop_.reset();
  ::close(wake_write_fd_);
  wake_write_fd_ = -1;
}

TcpStoreServer::~TcpStoreServer() { stop(); }

}  // namespace zerotrain::comm
