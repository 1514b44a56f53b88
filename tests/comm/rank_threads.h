// Test helper: runs one function per rank on its own thread, each rank with
// a real Gloo communicator rendezvousing over a TCP store on 127.0.0.1
// (port 0), and the closed-form byte formulas of docs/algorithms.md.
//
//   run_ranks(4, [](Communicator& c) { ASSERT_TRUE(c.barrier().ok()); });
//
// Thread-safety: gtest assertions from rank threads are thread-safe on Linux.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

#include "comm/gloo/gloo_communicator.h"
#include "comm/store/tcp_store.h"

namespace zerotrain::comm::testutil {

inline CommOptions rank_options(int rank, int n, int port, std::chrono::milliseconds timeout) {
  CommOptions o;
  o.rank = rank;
  o.world_size = n;
  o.master_addr = "127.0.0.1";
  o.master_port = port;
  o.secret = "test-secret";
  o.timeout = timeout;
  o.host_store = false;  // the test owns the server (bound to port 0)
  return o;
}

inline void run_ranks(int n, const std::function<void(Communicator&)>& body,
                      std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  auto server = TcpStoreServer::start({"127.0.0.1", 0, "test-secret"});
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      auto comm = create_gloo_communicator(rank_options(r, n, (*server)->port(), timeout));
      ASSERT_TRUE(comm.ok()) << comm.status().to_string();
      body(**comm);
      // Nobody tears down its connections while a peer may still be reading.
      EXPECT_TRUE((*comm)->barrier().ok());
    });
  }
  for (auto& t : threads) t.join();
}

// Bytes rank r sends / receives in one ring allreduce of `count` elements
// of `es` bytes over n ranks: 2B - |c_r| - |c_{r+1}| and 2B - |c_{r-1}| - |c_r|.
inline uint64_t allreduce_sent(size_t count, size_t es, int n, int r) {
  if (n == 1) return 0;
  return es * (2 * count - ring_chunk(count, n, r).count - ring_chunk(count, n, (r + 1) % n).count);
}
inline uint64_t allreduce_received(size_t count, size_t es, int n, int r) {
  if (n == 1) return 0;
  return es *
         (2 * count - ring_chunk(count, n, (r + n - 1) % n).count - ring_chunk(count, n, r).count);
}

}  // namespace zerotrain::comm::testutil
