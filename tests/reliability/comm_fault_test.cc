// Fault injection on the real Gloo TCP path between real ranks (threads
// over 127.0.0.1): dropped, delayed and corrupted ring messages must end as
// a Timeout / Corruption naming the op and the peer, never as OK with a
// wrong result; and the wire checksum itself (CRC32C, 3-lane variant).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "comm/gloo/gloo_communicator.h"
#include "comm/store/tcp_store.h"
#include "core/crc32c.h"

namespace zerotrain::comm {
namespace {

using Clock = std::chrono::steady_clock;
using Action = FaultPlan::Action;
using std::chrono::milliseconds;

struct RankResult {
  Status status;
  std::vector<float> data;
  double seconds = 0;
  CommCounters counters;
};

// Every rank joins with `plan` (only plan.rank acts on it), runs `op` once
// and reports; a successful run ends with a barrier so nobody tears down
// while a peer still reads.
using Op = std::function<Status(Communicator&, std::vector<float>&)>;
// rank0_timeout (when > 0): rank 0's own timeout instead of `timeout`.
std::vector<RankResult> run_faulty(int n, const FaultPlan& plan, milliseconds timeout, size_t count,
                                   const Op& op, bool checksums = true,
                                   milliseconds rank0_timeout = milliseconds(0)) {
  auto server = TcpStoreServer::start({"127.0.0.1", 0, "s"});
  EXPECT_TRUE(server.ok()) << server.status().to_string();
  std::vector<RankResult> out(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      CommOptions o;
      o.rank = r;
      o.world_size = n;
      o.master_port = (*server)->port();
      o.secret = "s";
      o.timeout = r == 0 && rank0_timeout.count() > 0 ? rank0_timeout : timeout;
      o.host_store = false;
      o.fault = plan;
      o.wire_checksums = checksums;
      auto comm = create_gloo_communicator(o);
      ASSERT_TRUE(comm.ok()) << comm.status().to_string();
      RankResult& res = out[r];
      res.data.resize(count);
      for (size_t i = 0; i < count; ++i) res.data[i] = static_cast<float>((r + 1) * 1000 + i % 97);
      auto t0 = Clock::now();
      res.status = op(**comm, res.data);
      res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      res.counters = (*comm)->counters();
      const bool clean =
          plan.action == Action::kNone || (plan.action == Action::kDelay && plan.delay < timeout);
      if (res.status.ok() && clean) {
        EXPECT_TRUE((*comm)->barrier().ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

Status allreduce(Communicator& c, std::vector<float>& d) {
  return c.allreduce(std::span<float>(d), ReduceOp::kSum);
}

// Rank r's element i is (r+1)*1000 + i%97, so the sum over n ranks is
// 1000*n(n+1)/2 + n*(i%97): exact in fp32 for these sizes.
float expected_sum(int n, size_t i) {
  return static_cast<float>(1000 * n * (n + 1) / 2 + n * static_cast<int>(i % 97));
}

bool is_allreduce_result(const std::vector<float>& d, int n) {
  for (size_t i = 0; i < d.size(); ++i)
    if (d[i] != expected_sum(n, i)) return false;
  return true;
}

bool contains(const Status& s, const std::string& text) {
  return s.message().find(text) != std::string::npos;
}

TEST(WireChecksum, Crc32cMatchesTheStandardCheckValue) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c_portable("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
}

TEST(WireChecksum, FastPathEqualsPortableAtEveryLengthAndAlignment) {
  std::vector<unsigned char> buf(1 << 12);
  std::mt19937 rng(7);
  for (auto& b : buf) b = static_cast<unsigned char>(rng());
  for (size_t len = 0; len < 200; ++len)
    for (size_t off = 0; off < 8; ++off) {
      ASSERT_EQ(wire_checksum(buf.data() + off, len), wire_checksum_portable(buf.data() + off, len))
          << len << " at " << off;
      ASSERT_EQ(crc32c(buf.data() + off, len), crc32c_portable(buf.data() + off, len));
    }
  EXPECT_EQ(wire_checksum(buf.data(), buf.size()), wire_checksum_portable(buf.data(), buf.size()));
}

TEST(WireChecksum, EverySingleByteChangeIsDetected) {
  std::vector<unsigned char> buf(301);
  std::iota(buf.begin(), buf.end(), 0);
  const uint32_t good = wire_checksum(buf.data(), buf.size());
  for (size_t i = 0; i < buf.size(); ++i)
    for (unsigned char flip : {0x01, 0x80, 0xFF}) {
      buf[i] ^= flip;
      EXPECT_NE(wire_checksum(buf.data(), buf.size()), good) << "byte " << i;
      buf[i] ^= flip;
    }
}

// 4 checksum bytes per payload message, counted apart: payload counters
// keep the exact ring formula 2B - |c_r| - |c_{r+1}|.
TEST(WireChecksum, CountedApartFromPayloadBytes) {
  const int n = 3;
  const size_t count = 1000;  // chunks 334, 333, 333: one piece each
  auto res = run_faulty(n, {}, milliseconds(5000), count, allreduce);
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(res[r].status.ok()) << res[r].status.to_string();
    EXPECT_TRUE(is_allreduce_result(res[r].data, n));
    const OpCounters& c = res[r].counters.op(OpType::kAllreduce);
    uint64_t own = ring_chunk(count, n, r).count, next = ring_chunk(count, n, (r + 1) % n).count;
    EXPECT_EQ(c.bytes_sent, 4 * (2 * count - own - next));
    // 2(n-1) messages each way.
    EXPECT_EQ(res[r].counters.checksum_bytes_sent, 4u * 2 * (n - 1));
    EXPECT_EQ(res[r].counters.checksum_bytes_received, 4u * 2 * (n - 1));
  }
}

TEST(CommFault, DroppedMessageTimesOutTheReceiverNamingOpAndPeer) {
  FaultPlan plan;
  plan.action = Action::kDrop;
  plan.rank = 0;
  plan.peer = 1;
  const auto timeout = milliseconds(1500);
  // Rank 0, the dropper, then waits for rank 1's next message in vain too;
  // with the same timeout its own could fire first under load and close
  // the connection, so rank 1 would see a closed peer instead of its
  // timeout. Rank 0 waits longer: rank 1's timeout comes first.
  auto res = run_faulty(2, plan, timeout, 4096, allreduce, true, milliseconds(4000));
  const Status& st = res[1].status;
  EXPECT_EQ(st.code(), StatusCode::kTimeout) << st.to_string();
  EXPECT_TRUE(contains(st, "allreduce of 16384 bytes")) << st.to_string();
  EXPECT_TRUE(contains(st, "on rank 1 timed out after 1.5 s waiting to receive from peer rank 0"))
      << st.to_string();
  EXPECT_GE(res[1].seconds, 1.4);
  EXPECT_LT(res[1].seconds, 1.5 + 2.0);
  EXPECT_FALSE(res[0].status.ok()) << "rank 0 never got rank 1's half";
}

TEST(CommFault, DelayShorterThanTimeoutGivesTheExactResult) {
  FaultPlan plan;
  plan.action = Action::kDelay;
  plan.rank = 1;
  plan.message = 1;
  plan.delay = milliseconds(400);
  auto res = run_faulty(3, plan, milliseconds(3000), 5000, allreduce);
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(res[r].status.ok()) << r << ": " << res[r].status.to_string();
    EXPECT_TRUE(is_allreduce_result(res[r].data, 3)) << "rank " << r;
  }
  EXPECT_GE(res[1].seconds, 0.4) << "the delay was applied";
}

TEST(CommFault, DelayLongerThanTimeoutIsATimeoutOnTheReceiver) {
  FaultPlan plan;
  plan.action = Action::kDelay;
  plan.rank = 0;
  plan.peer = 1;
  plan.delay = milliseconds(2000);
  auto res = run_faulty(2, plan, milliseconds(800), 4096, allreduce);
  const Status& st = res[1].status;
  EXPECT_EQ(st.code(), StatusCode::kTimeout) << st.to_string();
  EXPECT_TRUE(contains(st, "allreduce")) << st.to_string();
  EXPECT_TRUE(contains(st, "waiting to receive from peer rank 0")) << st.to_string();
  EXPECT_LT(res[1].seconds, 1.9) << "failed at the timeout, not after the delay";
  EXPECT_FALSE(res[0].status.ok());
}

// One corrupted byte, for each collective: the receiver reports Corruption
// naming op and peer; any rank that returns OK holds the exact result.
struct CorruptCase {
  const char* name;
  OpType type;
  Op op;
  std::function<bool(const std::vector<float>&, int r)> correct;
};

std::vector<CorruptCase> corrupt_cases() {
  const int n = 3;
  return {
      {"allreduce", OpType::kAllreduce, allreduce,
       [](auto& d, int) { return is_allreduce_result(d, n); }},
      {"reduce_scatter", OpType::kReduceScatter,
       [](Communicator& c, std::vector<float>& d) {
         std::vector<float> out(d.size() / n);
         Status s =
             c.reduce_scatter(std::span<const float>(d), std::span<float>(out), ReduceOp::kSum);
         d.assign(out.begin(), out.end());
         return s;
       },
       [](auto& d, int r) {
         for (size_t i = 0; i < d.size(); ++i)
           if (d[i] != expected_sum(n, r * d.size() + i)) return false;
         return true;
       }},
      {"allgather", OpType::kAllgather,
       [](Communicator& c, std::vector<float>& d) {
         std::vector<float> out(d.size() * n);
         Status s = c.allgather(std::span<const float>(d), std::span<float>(out));
         d = out;
         return s;
       },
       [](auto& d, int) {
         const size_t m = d.size() / n;
         for (size_t i = 0; i < d.size(); ++i)
           if (d[i] != static_cast<float>((i / m + 1) * 1000 + (i % m) % 97)) return false;
         return true;
       }},
      {"broadcast", OpType::kBroadcast,
       [](Communicator& c, std::vector<float>& d) { return c.broadcast(std::span<float>(d), 0); },
       [](auto& d, int) {
         for (size_t i = 0; i < d.size(); ++i)
           if (d[i] != static_cast<float>(1000 + i % 97)) return false;
         return true;
       }},
      {"barrier", OpType::kBarrier,
       [](Communicator& c, std::vector<float>&) { return c.barrier(); },
       [](auto&, int) { return true; }},
  };
}

TEST(CommFault, CorruptedByteIsACorruptionErrorForEveryCollective) {
  for (const CorruptCase& cc : corrupt_cases()) {
    SCOPED_TRACE(cc.name);
    FaultPlan plan;
    plan.action = Action::kCorrupt;
    plan.rank = 0;
    plan.peer = 1;
    plan.op = cc.type;
    plan.byte = 5;
    auto res = run_faulty(3, plan, milliseconds(3000), 3000, cc.op);
    const Status& st = res[1].status;
    EXPECT_EQ(st.code(), StatusCode::kCorruption) << st.to_string();
    EXPECT_TRUE(contains(st, std::string(cc.name))) << st.to_string();
    EXPECT_TRUE(contains(st, "failed on rank 1")) << st.to_string();
    EXPECT_TRUE(contains(st, "from peer rank 0 failed its wire checksum")) << st.to_string();
    if (cc.type == OpType::kAllreduce) std::printf("%s\n", st.to_string().c_str());
    for (int r = 0; r < 3; ++r) {
      if (res[r].status.ok()) {
        EXPECT_TRUE(cc.correct(res[r].data, r)) << "rank " << r;
      }
    }
  }
}

// The seam really damages the wire: without checksums the same fault is a
// silently wrong result, which is what the checksum exists to prevent.
TEST(CommFault, WithoutChecksumsTheSameCorruptionIsSilent) {
  FaultPlan plan;
  plan.action = Action::kCorrupt;
  plan.rank = 0;
  plan.peer = 1;
  plan.byte = 2;  // high byte of element 0 of the message: a large error
  auto res = run_faulty(2, plan, milliseconds(3000), 4096, allreduce, /*checksums=*/false);
  ASSERT_TRUE(res[1].status.ok()) << res[1].status.to_string();
  EXPECT_FALSE(is_allreduce_result(res[1].data, 2));
  EXPECT_EQ(res[1].counters.checksum_bytes_received, 0u);
}

// The price of the checksum on a 64 MiB fp32 allreduce at 2 ranks (both
// ranks share this machine's cores): best of 3 each way, printed for
// docs/algorithms.md. 64 pieces of 512 KiB per chunk, 2(n-1) = 2 ring
// phases: 128 messages, 512 checksum bytes each way per rank.
TEST(WireChecksum, CostOn64MiBAllreduce) {
  const size_t count = (64u << 20) / 4;
  double best[2] = {1e9, 1e9};
  for (int rep = 0; rep < 3; ++rep) {
    for (int on = 0; on < 2; ++on) {
      auto res = run_faulty(2, {}, milliseconds(20000), count, allreduce, on == 1);
      for (int r = 0; r < 2; ++r) {
        ASSERT_TRUE(res[r].status.ok()) << res[r].status.to_string();
        best[on] = std::min(best[on], res[r].seconds);
      }
      EXPECT_TRUE(is_allreduce_result(res[0].data, 2));
      EXPECT_EQ(res[0].counters.checksum_bytes_sent, on ? 512u : 0u);
      EXPECT_EQ(res[0].counters.op(OpType::kAllreduce).bytes_sent, uint64_t{64} << 20);
    }
  }
  std::printf("64 MiB allreduce, 2 ranks: %.1f ms without checksums, %.1f ms with (%+.1f%%)\n",
              best[0] * 1e3, best[1] * 1e3, 100.0 * (best[1] / best[0] - 1));
  std::vector<std::byte> buf(64u << 20, std::byte{1});
  auto t0 = Clock::now();
  volatile uint32_t sink = wire_checksum(buf.data(), buf.size());
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  (void)sink;
  std::printf("wire_checksum: %.2f GB/s on one core\n", buf.size() / s / 1e9);
}

}  // namespace
}  // namespace zerotrain::comm
