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
#include "comm/rendezvous.h"
#include "core/log.h"

namespace zerotrain::comm {
namespace {

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
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
  store_.reset();  // rank 0's server goes with the last holder of the store
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
  ZT_ASSIGN_OR_RETURN(store_, connect_store(options_));
  store_address_ = store_->address();
  ZT_ASSIGN_OR_RETURN(std::string prefix,
                      fresh_prefix(*store_, "zt/" + options_.group + "/", rank()));
  ZT_RETURN_IF_ERROR(exchange_with_ranks(*store_, prefix + "arrived/", rank(), world_size(), "1",
                                         timeout(), /*read=*/false)
                         .status());
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
