// Gloo backend: real processes over gloo's TCP transport. Collectives are
// ring algorithms written over gloo unbound buffers (see docs/algorithms.md
// for steps and bytes on the wire), so every byte is counted and every wait
// is bounded by CommOptions::timeout. Rendezvous: rank 0 hosts a
// TcpStoreServer at master_addr:master_port (unless options.store is given),
// every rank announces itself, waits for all others (a timeout names the
// ranks that did not arrive), then gloo connects the full mesh over the
// store and a barrier confirms it. World size 1 uses no network at all.
//
//   ZT_ASSIGN_OR_RETURN(CommOptions options, comm_options_from_env());
//   ZT_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> comm, create_gloo_communicator(options));
//
// Creating a communicator ignores SIGPIPE process-wide if it was at its
// default (gloo writes with writev, which would otherwise kill the process
// when a peer dies).
//
// Thread-safety: as Communicator.
#pragma once

#include <memory>

#include "comm/communicator.h"

namespace zerotrain::comm {

StatusOr<std::unique_ptr<Communicator>> create_gloo_communicator(const CommOptions& options);

}  // namespace zerotrain::comm
