// TCP rendezvous store. TcpStoreServer (run by rank 0 at MASTER_ADDR:
// MASTER_PORT) keeps the key-value table on a background poll() thread and
// serves many clients; blocking get/wait requests are parked and answered
// when their keys appear or their deadline passes. TcpStoreClient is the
// Store every rank uses. Authentication: a client's first message presents
// the job secret (ZEROTRAIN_JOB_SECRET); the server compares it in constant
// time and, if wrong, replies "refused" and closes, and the client returns
// PermissionDenied.
//
//   ZT_ASSIGN_OR_RETURN(auto server, TcpStoreServer::start({.port = 0, .secret = s}));
//   ZT_ASSIGN_OR_RETURN(auto client, TcpStoreClient::connect(
//       {.host = "127.0.0.1", .port = server->port(), .secret = s}));
//   ZT_RETURN_IF_ERROR(client->set("k", "v"));
//
// Thread-safety: the server is internally synchronised (stop() and port()
// from any thread). A client serialises its requests under a mutex, so it may
// be shared by threads, but a blocking get/wait holds it for its duration.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "comm/store/store.h"

namespace zerotrain::comm {

struct TcpStoreServerOptions {
  std::string host;  // IPv4 address to bind; empty = all interfaces
  int port = 0;      // 0 = any free port (see port())
  std::string secret;
};

class TcpStoreServer {
 public:
  static StatusOr<std::unique_ptr<TcpStoreServer>> start(const TcpStoreServerOptions& options);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const { return port_; }
  // Stops the thread and closes every client connection; idempotent.
  void stop();
  // Clients turned away for a wrong secret since start (for tests and logs).
  int refused_clients() const { return refused_.load(); }

 private:
  class Loop;
  TcpStoreServer() = default;

  int port_ = 0;
  int wake_write_fd_ = -1;
  std::atomic<int> refused_{0};
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
  std::mutex stop_mu_;
};

struct TcpStoreClientOptions {
  std::string host = "127.0.0.1";
  int port = 29500;
  std::string secret;
  // How long to keep retrying the connection (rank 0 may start later).
  std::chrono::milliseconds connect_timeout{30000};
  // Deadline for non-blocking requests (set, add, ...).
  std::chrono::milliseconds io_timeout{30000};
};

class TcpStoreClient final : public Store {
 public:
  static StatusOr<std::unique_ptr<TcpStoreClient>> connect(const TcpStoreClientOptions& options);
  ~TcpStoreClient() override;

  Status set(const std::string& key, const std::string& value) override;
  StatusOr<std::string> get(const std::string& key, std::chrono::milliseconds timeout) override;
  StatusOr<int64_t> add(const std::string& key, int64_t delta) override;
  Status wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  StatusOr<std::vector<std::string>> missing_keys(const std::vector<std::string>& keys) override;
  StatusOr<bool> erase(const std::string& key) override;
  std::string address() const override { return address_; }

 private:
  TcpStoreClient(TcpStoreClientOptions options, int fd);
  // Sends one request frame and returns the reply payload (status byte
  // first). `server_wait` is how long the server may park the request.
  StatusOr<std::string> request(const std::string& frame, std::chrono::milliseconds server_wait);

  TcpStoreClientOptions options_;
  std::string address_;
  std::mutex mu_;
  int fd_ = -1;
  Status broken_;  // set after an I/O failure: the stream is out of sync
};

}  // namespace zerotrain::comm
