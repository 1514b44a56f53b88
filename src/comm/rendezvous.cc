// Store connection, group key spaces and the named all-ranks exchange
// (rendezvous.h).
#include "comm/rendezvous.h"

#include "comm/store/tcp_store.h"

namespace zerotrain::comm {
namespace {

// The client, holding rank 0's server for as long as the client lives.
struct HostedStore {
  std::unique_ptr<TcpStoreServer> server;
  std::unique_ptr<TcpStoreClient> client;
};

}  // namespace

std::string seconds_text(std::chrono::milliseconds ms) {
  std::string s = std::to_string(ms.count() / 1000.0);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s + " s";
}

StatusOr<std::shared_ptr<Store>> connect_store(const CommOptions& options) {
  if (options.store) return options.store;
  auto hosted = std::make_shared<HostedStore>();
  if (options.rank == 0 && options.host_store) {
    ZT_ASSIGN_OR_RETURN(hosted->server,
                        TcpStoreServer::start({"", options.master_port, options.secret}));
  }
  TcpStoreClientOptions client;
  client.host = options.master_addr;
  client.port = options.master_port;
  client.secret = options.secret;
  client.connect_timeout = options.timeout;
  client.io_timeout = options.timeout;
  ZT_ASSIGN_OR_RETURN(hosted->client, TcpStoreClient::connect(client));
  Store* store = hosted->client.get();
  return std::shared_ptr<Store>(std::move(hosted), store);  // aliasing: owns both
}

StatusOr<std::string> fresh_prefix(Store& store, const std::string& space, int rank) {
  ZT_ASSIGN_OR_RETURN(int64_t generation,
                      store.add(space + "generation/" + std::to_string(rank), 1));
  return space + std::to_string(generation) + "/";
}

StatusOr<std::vector<std::string>> exchange_with_ranks(Store& store, const std::string& prefix,
                                                       int rank, int world_size,
                                                       const std::string& value,
                                                       std::chrono::milliseconds timeout,
                                                       bool read) {
  const std::string where = "rendezvous at " + store.address();
  ZT_RETURN_IF_ERROR(store.set(prefix + std::to_string(rank), value).with_context(where));
  std::vector<std::string> keys;
  for (int r = 0; r < world_size; ++r) keys.push_back(prefix + std::to_string(r));
  Status st = store.wait(keys, timeout);
  if (!st.ok()) {
    if (st.code() != StatusCode::kTimeout) return st.with_context(where);
    StatusOr<std::vector<std::string>> missing = store.missing_keys(keys);
    std::string ranks;
    int count = 0;
    for (const std::string& k : missing.ok() ? *missing : keys) {
      ranks += (ranks.empty() ? "" : ", ") + k.substr(prefix.size());
      ++count;
    }
    return timeout_error(where + " timed out after " + seconds_text(timeout) + " on rank " +
                         std::to_string(rank) + ": " + (count == 1 ? "rank " : "ranks ") + ranks +
                         " of world size " + std::to_string(world_size) + " did not arrive");
  }
  std::vector<std::string> values;
  if (!read) return values;
  for (const std::string& k : keys) {
    ZT_ASSIGN_OR_RETURN(std::string v, store.get(k, timeout));
    values.push_back(std::move(v));
  }
  return values;
}

}  // namespace zerotrain::comm
