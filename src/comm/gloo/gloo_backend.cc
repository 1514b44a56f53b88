// GlooCommunicator lifetime: store set-up, rendezvous with named missing
// ranks, gloo full-mesh connect, failure bookkeeping; and the factory.
#include "comm/gloo/gloo_backend.h"

#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>
#include <unistd.h>

#include "comm/gloo/gloo_communicator.h"
#include "comm/gloo/gloo_store.h"
#include "core/log.h"

namespace zerotrain::comm {
namespace {

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

std::string seconds_text(std::chrono::milliseconds ms) {
  std::string s = std::to_string(ms.count() / 1000.0);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s + " s";
}

void ignore_sigpipe_once() {
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL)
    ::signal(SIGPIPE, SIG_IGN);
}

}  // namespace

GlooCommunicator::GlooCommunicator(const CommOptions& options)
    : Communicator(options.rank, options.world_size, options.timeout), options_(options) {
  store_address_ = options.master_addr + ":" + std::to_string(options.master_port);
}

GlooCommunicator::~GlooCommunicator() {
  shutdown();  // no hook may run while members go away
  context_.reset();
  store_.reset();
  server_.reset();
}

std::unique_ptr<gloo::transport::UnboundBuffer> GlooCommunicator::buffer(void* ptr, size_t bytes) {
  return context_->createUnboundBuffer(ptr, bytes);
}

Status GlooCommunicator::fail(const std::string& desc, int peer, const char* direction,
                              const std::string& what) {
  std::string where = desc + " failed on rank " + std::to_string(rank()) + ": ";
  Status st;
  if (what.find("Timed out") != std::string::npos) {
    st = timeout_error(desc + " on rank " + std::to_string(rank()) + " timed out after " +
                       seconds_text(timeout()) + " waiting to " + direction + " peer rank " +
                       std::to_string(peer));
  } else if (what.find("closed") != std::string::npos || what.find("reset") != std::string::npos ||
             what.find("Broken pipe") != std::string::npos) {
    st = unavailable(where + "peer rank " + std::to_string(peer) +
                     " closed the connection (gloo: " + what + ")");
  } else {
    st = unavailable(where + "connection to peer rank " + std::to_string(peer) +
                     " failed (gloo: " + what + ")");
  }
  return fail_with(std::move(st));
}

Status GlooCommunicator::fail_with(Status st) {
  if (broken_.ok()) {
    broken_ = Status(st.code(), "communicator unusable after an earlier failure: " + st.message());
    // Closing our side makes our ring neighbours fail now rather than at
    // their own timeout, so one dead rank stops the whole job quickly.
    try {
      context_->closeConnections();
    } catch (const std::exception& e) {
      log::warn("closing gloo connections after a failure: ", e.what());
    }
  }
  return st;
}

Status GlooCommunicator::rendezvous_arrivals(Store& store, const std::string& prefix) {
  int n = world_size();
  ZT_RETURN_IF_ERROR(store.set(prefix + "arrived/" + std::to_string(rank()), "1")
                         .with_context("rendezvous at " + store_address_));
  std::vector<std::string> keys;
  for (int r = 0; r < n; ++r) keys.push_back(prefix + "arrived/" + std::to_string(r));
  Status st = store.wait(keys, timeout());
  if (st.ok()) return st;
  if (st.code() != StatusCode::kTimeout) return st.with_context("rendezvous at " + store_address_);
  StatusOr<std::vector<std::string>> missing = store.missing_keys(keys);
  std::string ranks;
  int count = 0;
  for (const std::string& k : missing.ok() ? *missing : keys) {
    ranks += (ranks.empty() ? "" : ", ") + k.substr(k.rfind('/') + 1);
    ++count;
  }
  return timeout_error("rendezvous at " + store_address_ + " timed out after " +
                       seconds_text(timeout()) + " on rank " + std::to_string(rank()) + ": " +
                       (count == 1 ? "rank " : "ranks ") + ranks + " of world size " +
                       std::to_string(n) + " did not arrive");
}

Status GlooCommunicator::connect_mesh(Store& store, const std::string& prefix) {
  gloo::transport::tcp::attr attr;
  if (!options_.iface.empty()) {
    attr.iface = options_.iface;
  } else if (!options_.hostname.empty()) {
    attr.hostname = options_.hostname;
  } else if (is_loopback(options_.master_addr)) {
    attr.hostname = "127.0.0.1";
  } else {
    char host[256] = {0};
    ::gethostname(host, sizeof(host) - 1);
    attr.hostname = host;
  }
  try {
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank(), world_size());
    context->setTimeout(timeout());
    GlooStoreAdapter adapter(store, prefix + "gloo/", timeout());
    context->connectFullMesh(adapter, device);
    context_ = std::move(context);
  } catch (const std::exception& e) {
    return unavailable("rendezvous at " + store_address_ + ": rank " + std::to_string(rank()) +
                       " could not connect to its peers (gloo: " + e.what() + ")");
  }
  return ok_status();
}

Status GlooCommunicator::connect() {
  if (options_.store) {
    store_ = options_.store;
    store_address_ = store_->address();
  } else {
    if (rank() == 0 && options_.host_store) {
      ZT_ASSIGN_OR_RETURN(server_,
                          TcpStoreServer::start({"", options_.master_port, options_.secret}));
    }
    TcpStoreClientOptions client;
    client.host = options_.master_addr;
    client.port = options_.master_port;
    client.secret = options_.secret;
    client.connect_timeout = timeout();
    client.io_timeout = timeout();
    ZT_ASSIGN_OR_RETURN(store_, TcpStoreClient::connect(client));
  }
  // Each creation of a group gets its own key space, so a job may build
  // (or rebuild) several communicators over one store.
  std::string group = "zt/" + options_.group + "/";
  ZT_ASSIGN_OR_RETURN(int64_t generation,
                      store_->add(group + "generation/" + std::to_string(rank()), 1));
  std::string prefix = group + std::to_string(generation) + "/";
  ZT_RETURN_IF_ERROR(rendezvous_arrivals(*store_, prefix));
  ZT_RETURN_IF_ERROR(connect_mesh(*store_, prefix));
  // Nobody leaves until everyone's mesh is up: rank 0's store may then go.
  ZT_RETURN_IF_ERROR(do_barrier().with_context("rendezvous at " + store_address_));
  reset_counters();
  connected_ = true;
  return ok_status();
}

FaultPlan::Action GlooCommunicator::next_fault(OpType op, int peer) {
  const FaultPlan& f = options_.fault;
  if (f.action == FaultPlan::Action::kNone || !connected_ || f.rank != rank()) {
    return FaultPlan::Action::kNone;
  }
  if ((f.peer >= 0 && f.peer != peer) || (f.op && *f.op != op)) return FaultPlan::Action::kNone;
  return fault_matches_++ == f.message ? f.action : FaultPlan::Action::kNone;
}

StatusOr<std::unique_ptr<Communicator>> create_gloo_communicator(const CommOptions& options) {
  ZT_RETURN_IF_ERROR(validate_comm_options(options));
  if (options.world_size > 1 && options.secret.empty() && !options.store)
    log::warn("no job secret (ZEROTRAIN_JOB_SECRET): the rendezvous store accepts any client");
  ignore_sigpipe_once();
  auto comm = std::make_unique<GlooCommunicator>(options);
  if (options.world_size > 1) ZT_RETURN_IF_ERROR(comm->connect());
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace zerotrain::comm
