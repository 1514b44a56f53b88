// Failure paths of the Gloo communicator: a stalled peer times out with a
// Status naming the op, sizes and peer; the survivor's closed connection
// fails the other side fast; later calls fail immediately; rendezvous names
// the ranks that never arrived; a wrong secret is PermissionDenied; world
// size 1 needs no network.
#include <gtest/gtest.h>

#include <thread>

#include "rank_threads.h"

namespace zerotrain::comm {
namespace {

using std::chrono::milliseconds;
using testutil::rank_options;
using Clock = std::chrono::steady_clock;

bool contains(const Status& st, const std::string& text) {
  return st.message().find(text) != std::string::npos;
}

TEST(CommFailure, StalledPeerTimesOutNamingOpSizeAndPeer) {
  auto server = std::move(TcpStoreServer::start({"127.0.0.1", 0, "test-secret"})).value();
  Status rank0_status, rank0_later, rank1_status;
  double rank0_seconds = 0;
  auto rank = [&](int r) {
    auto comm = create_gloo_communicator(rank_options(r, 2, server->port(), milliseconds(1000)));
    ASSERT_TRUE(comm.ok()) << comm.status().to_string();
    std::vector<float> v(1024, 1.0f);
    if (r == 0) {
      auto start = Clock::now();
      rank0_status = (*comm)->allreduce(std::span<float>(v), ReduceOp::kSum);
      rank0_seconds = std::chrono::duration<double>(Clock::now() - start).count();
      rank0_later = (*comm)->barrier();
    } else {
      std::this_thread::sleep_for(milliseconds(1800));  // stall past rank 0's timeout
      rank1_status = (*comm)->allreduce(std::span<float>(v), ReduceOp::kSum);
    }
  };
  std::thread t0(rank, 0), t1(rank, 1);
  t0.join();
  t1.join();
  EXPECT_EQ(rank0_status.code(), StatusCode::kTimeout) << rank0_status.to_string();
  EXPECT_TRUE(contains(rank0_status, "allreduce of 4096 bytes (1024 x fp32) on rank 0 timed out"))
      << rank0_status.message();
  EXPECT_TRUE(contains(rank0_status, "peer rank 1")) << rank0_status.message();
  EXPECT_GE(rank0_seconds, 0.9);
  EXPECT_LT(rank0_seconds, 3.0);
  // The failure is sticky and immediate.
  EXPECT_TRUE(contains(rank0_later, "unusable after an earlier failure")) << rank0_later.message();
  // Rank 0 closed its connections, so the late rank fails at once, not at its timeout.
  EXPECT_EQ(rank1_status.code(), StatusCode::kUnavailable) << rank1_status.to_string();
  EXPECT_TRUE(contains(rank1_status, "allreduce of 4096 bytes (1024 x fp32) failed on rank 1"))
      << rank1_status.message();
  EXPECT_TRUE(contains(rank1_status, "peer rank 0")) << rank1_status.message();
}

TEST(CommFailure, RendezvousTimeoutNamesStoreAndMissingRanks) {
  auto server = std::move(TcpStoreServer::start({"127.0.0.1", 0, "test-secret"})).value();
  std::vector<Status> results(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      results[r] =
          create_gloo_communicator(rank_options(r, 4, server->port(), milliseconds(500))).status();
    });
  for (auto& t : threads) t.join();
  std::string addr = "rendezvous at 127.0.0.1:" + std::to_string(server->port());
  for (const Status& st : results) {
    EXPECT_EQ(st.code(), StatusCode::kTimeout) << st.to_string();
    EXPECT_TRUE(contains(st, addr)) << st.message();
    EXPECT_TRUE(contains(st, "ranks 2, 3 of world size 4 did not arrive")) << st.message();
  }
}

TEST(CommFailure, WrongSecretIsPermissionDenied) {
  auto server = std::move(TcpStoreServer::start({"127.0.0.1", 0, "test-secret"})).value();
  CommOptions o = rank_options(1, 2, server->port(), milliseconds(2000));
  o.secret = "guess";
  auto comm = create_gloo_communicator(o);
  EXPECT_EQ(comm.status().code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(contains(comm.status(), "refused this process: wrong job secret"));
}

TEST(CommFailure, MissingStoreFailsWithinTimeoutNamingAddress) {
  int port = 0;
  { port = std::move(TcpStoreServer::start({"127.0.0.1", 0, ""})).value()->port(); }
  auto start = Clock::now();
  auto comm = create_gloo_communicator(rank_options(1, 2, port, milliseconds(400)));
  EXPECT_LT(Clock::now() - start, milliseconds(3000));
  EXPECT_EQ(comm.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(contains(comm.status(), "127.0.0.1:" + std::to_string(port)));
}

TEST(CommWorldOne, NeedsNoNetworkAndIsIdentity) {
  CommOptions o;
  o.master_addr = "no-such-host.invalid";  // never contacted
  auto comm = create_gloo_communicator(o);
  ASSERT_TRUE(comm.ok()) << comm.status().to_string();
  std::vector<float> v = {1.5f, -2.0f};
  ASSERT_TRUE((*comm)->allreduce(std::span<float>(v), ReduceOp::kAvg).ok());
  EXPECT_EQ(v, (std::vector<float>{1.5f, -2.0f}));
  std::vector<float> out(2);
  ASSERT_TRUE((*comm)->allgather(std::span<const float>(v), std::span<float>(out)).ok());
  EXPECT_EQ(out, v);
  EXPECT_TRUE((*comm)->barrier().ok());
  EXPECT_EQ((*comm)->counters().total().bytes_sent, 0u);
  EXPECT_EQ((*comm)->counters().op(OpType::kAllreduce).calls, 1u);
}

TEST(CommOptionsCheck, RejectsRankOutsideWorld) {
  CommOptions o;
  o.rank = 3;
  o.world_size = 2;
  auto comm = create_gloo_communicator(o);
  EXPECT_EQ(comm.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(comm.status(), "rank 3 is outside world size 2"));
}

}  // namespace
}  // namespace zerotrain::comm
