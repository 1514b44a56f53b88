// TcpStoreClient: connect with retry, authenticate, synchronous requests.
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "comm/store/net.h"
#include "comm/store/tcp_store.h"

namespace zerotrain::comm {

using net::Clock;
using net::Reply;
using net::StoreOp;
using net::WireReader;
using net::WireWriter;

namespace {

// Extra time a client allows past a parked request's own timeout before it
// gives up on the server itself.
constexpr std::chrono::milliseconds kServerGrace{5000};

Status malformed(const std::string& address) {
  return corruption("store at " + address + " sent a malformed reply");
}

// Authenticates a fresh connection; PermissionDenied if refused.
Status hello(int fd, const TcpStoreClientOptions& o, const std::string& address) {
  WireWriter w(static_cast<uint8_t>(StoreOp::kHello));
  w.put_str(o.secret);
  Clock::time_point deadline = Clock::now() + o.io_timeout;
  std::string who = "store at " + address;
  ZT_RETURN_IF_ERROR(net::write_all(fd, w.frame(), deadline, who));
  StatusOr<std::string> reply = net::read_frame(fd, deadline, who);
  if (!reply.ok()) return reply.status();
  uint8_t code = 255;
  WireReader(*reply).get_u8(&code);
  if (code == static_cast<uint8_t>(Reply::kRefused))
    return permission_denied("store at " + address +
                             " refused this process: wrong job secret (ZEROTRAIN_JOB_SECRET)");
  if (code != static_cast<uint8_t>(Reply::kOk)) return malformed(address);
  return ok_status();
}

}  // namespace

StatusOr<std::unique_ptr<TcpStoreClient>> TcpStoreClient::connect(
    const TcpStoreClientOptions& options) {
  std::string address = options.host + ":" + std::to_string(options.port);
  Clock::time_point deadline = Clock::now() + options.connect_timeout;
  std::chrono::milliseconds backoff{20};
  Status last;
  for (;;) {
    Clock::time_point attempt_deadline = std::min(deadline, Clock::now() + std::chrono::seconds(2));
    StatusOr<int> fd = net::tcp_connect(options.host, options.port, attempt_deadline);
    if (fd.ok()) {
      Status auth = hello(*fd, options, address);
      if (!auth.ok()) {
        ::close(*fd);
        return auth;
      }
      return std::unique_ptr<TcpStoreClient>(new TcpStoreClient(options, *fd));
    }
    last = fd.status();
    if (Clock::now() + backoff >= deadline) break;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
  }
  return unavailable("could not connect to store at " + address + " within " +
                     std::to_string(options.connect_timeout.count()) +
                     " ms (is rank 0 running?): " + last.message());
}

TcpStoreClient::TcpStoreClient(TcpStoreClientOptions options, int fd)
    : options_(std::move(options)),
      address_(options_.host + ":" + std::to_string(options_.port)),
      fd_(fd) {}

TcpStoreClient::~TcpStoreClient() {
  if (fd_ >= 0) ::close(fd_);
}

StatusOr<std::string> TcpStoreClient::request(const std::string& frame,
                                              std::chrono::milliseconds server_wait) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!broken_.ok()) return broken_;
  std::string who = "store at " + address_;
  Clock::time_point deadline = Clock::now() + options_.io_timeout + server_wait;
  Status st = net::write_all(fd_, frame, deadline, who);
  StatusOr<std::string> reply =
      st.ok() ? net::read_frame(fd_, deadline, who) : StatusOr<std::string>(st);
  if (!reply.ok()) {
    // A half-done exchange leaves the stream unusable; fail every later call.
    broken_ = reply.status();
    return broken_;
  }
  if (reply->empty()) return malformed(address_);
  if (static_cast<uint8_t>((*reply)[0]) == static_cast<uint8_t>(Reply::kBadRequest)) {
    WireReader r(*reply);
    uint8_t code;
    std::string why;
    r.get_u8(&code);
    r.get_str(&why);
    return invalid_argument("store at " + address_ + " rejected the request: " + why);
  }
  return reply;
}

Status TcpStoreClient::set(const std::string& key, const std::string& value) {
  WireWriter w(static_cast<uint8_t>(StoreOp::kSet));
  w.put_str(key);
  w.put_str(value);
  ZT_ASSIGN_OR_RETURN(std::string reply, request(w.frame(), std::chrono::milliseconds(0)));
  return ok_status();
}

StatusOr<std::string> TcpStoreClient::get(const std::string& key,
                                          std::chrono::milliseconds timeout) {
  WireWriter w(static_cast<uint8_t>(StoreOp::kGet));
  w.put_str(key);
  w.put_i64(timeout.count());
  ZT_ASSIGN_OR_RETURN(std::string reply, request(w.frame(), timeout + kServerGrace));
  WireReader r(reply);
  uint8_t code;
  std::string value;
  r.get_u8(&code);
  if (code == static_cast<uint8_t>(Reply::kTimeout))
    return store_timeout("store get", address_, timeout, {key});
  if (!r.get_str(&value)) return malformed(address_);
  return value;
}

StatusOr<int64_t> TcpStoreClient::add(const std::string& key, int64_t delta) {
  WireWriter w(static_cast<uint8_t>(StoreOp::kAdd));
  w.put_str(key);
  w.put_i64(delta);
  ZT_ASSIGN_OR_RETURN(std::string reply, request(w.frame(), std::chrono::milliseconds(0)));
  WireReader r(reply);
  uint8_t code;
  int64_t value;
  if (!r.get_u8(&code) || !r.get_i64(&value)) return malformed(address_);
  return value;
}

Status TcpStoreClient::wait(const std::vector<std::string>& keys,
                            std::chrono::milliseconds timeout) {
  WireWriter w(static_cast<uint8_t>(StoreOp::kWait));
  w.put_strs(keys);
  w.put_i64(timeout.count());
  ZT_ASSIGN_OR_RETURN(std::string reply, request(w.frame(), timeout + kServerGrace));
  WireReader r(reply);
  uint8_t code;
  r.get_u8(&code);
  if (code == static_cast<uint8_t>(Reply::kOk)) return ok_status();
  std::vector<std::string> missing;
  if (code != static_cast<uint8_t>(Reply::kTimeout) || !r.get_strs(&missing))
    return malformed(address_);
  return store_timeout("store wait", address_, timeout, missing);
}

StatusOr<std::vector<std::string>> TcpStoreClient::missing_keys(
    const std::vector<std::string>& keys) {
  WireWriter w(static_cast<uint8_t>(StoreOp::kMissing));
  w.put_strs(keys);
  ZT_ASSIGN_OR_RETURN(std::string reply, request(w.frame(), std::chrono::milliseconds(0)));
  WireReader r(reply);
  uint8_t code;
  std::vector<std::string> missing;
  if (!r.get_u8(&code) || !r.get_strs(&missing)) return malformed(address_);
  return missing;
}

StatusOr<bool> TcpStoreClient::erase(const std::string& key) {
  WireWriter w(static_cast<uint8_t>(StoreOp::kErase));
  w.put_str(key);
  ZT_ASSIGN_OR_RETURN(std::string reply, request(w.frame(), std::chrono::milliseconds(0)));
  WireReader r(reply);
  uint8_t code, existed;
  if (!r.get_u8(&code) || !r.get_u8(&existed)) return malformed(address_);
  return existed != 0;
}

}  // namespace zerotrain::comm
