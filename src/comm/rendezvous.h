// Rendezvous pieces every backend shares: connecting to the job's store
// (rank 0 hosts it), a fresh key space for each creation of a group, and
// the all-ranks exchange that names the ranks that did not arrive.
//
//   ZT_ASSIGN_OR_RETURN(std::shared_ptr<Store> store, connect_store(options));
//   ZT_ASSIGN_OR_RETURN(std::string prefix, fresh_prefix(*store, "zt/default/", rank));
//   ZT_ASSIGN_OR_RETURN(auto values, exchange_with_ranks(*store, prefix + "gpu/", rank, n,
//                                                        "host 0000:19:00.0", timeout));
//
// Thread-safety: as the Store.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/store/store.h"

namespace zerotrain::comm {

// options.store when given; else a TcpStoreClient to master_addr:master_port
// (authenticated with options.secret), after rank 0 started the
// TcpStoreServer there when options.host_store. The returned pointer owns
// that server too: it serves as long as anyone holds the store.
StatusOr<std::shared_ptr<Store>> connect_store(const CommOptions& options);

// "<space><generation>/": each creation of a group over one store counts
// its own generation (key <space>generation/<rank>), so a job may build (or
// rebuild) communicators without stale keys. Every rank must create the
// same groups in the same order.
StatusOr<std::string> fresh_prefix(Store& store, const std::string& space, int rank);

// Sets <prefix><rank> = value and waits for every rank's key: Timeout
// "rendezvous at ADDR timed out after T s on rank R: ranks 2, 3 of world
// size 4 did not arrive" past `timeout`. Returns the values by rank when
// `read` (else an empty vector).
StatusOr<std::vector<std::string>> exchange_with_ranks(Store& store, const std::string& prefix,
                                                       int rank, int world_size,
                                                       const std::string& value,
                                                       std::chrono::milliseconds timeout,
                                                       bool read = true);

// "1.5 s", "30 s": a timeout for messages.
std::string seconds_text(std::chrono::milliseconds ms);

}  // namespace zerotrain::comm
