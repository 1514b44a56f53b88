// zt_collective_worker: joins the job described by the environment (RANK,
// WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ZEROTRAIN_JOB_SECRET,
// ZEROTRAIN_COMM_TIMEOUT), runs every collective on rank-dependent data of
// sizes 0, 1, odd and ~1M floats, checks results against closed forms and
// the byte counters against docs/algorithms.md, prints one summary line and
// exits 0 (all matched) or 1 (first mismatch or comm error printed).
//
//   zerotrain run --num_gpus 4 -- zt_collective_worker
//   zt_collective_worker --loop 20   # allreduce until failure (fault tests)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "comm/gloo/gloo_communicator.h"
#include "comm/gloo/reduce.h"
#include "core/log.h"
#include "core/range.h"

namespace zc = zerotrain::comm;
using zerotrain::Status;

namespace {

int g_rank = 0;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "zt_collective_worker: rank %d FAILED: %s\n", g_rank, what.c_str());
  std::exit(1);
}

void check_status(const Status& st) {
  if (!st.ok()) fail(st.to_string());
}

void expect_eq(const char* what, size_t count, size_t i, double got, double want) {
  if (got != want)
    fail(std::string(what) + " count " + std::to_string(count) + ": element " + std::to_string(i) +
         " = " + std::to_string(got) + ", want " + std::to_string(want));
}

void expect_bytes(zc::Communicator& c, zc::OpType op, size_t count, uint64_t sent,
                  uint64_t received) {
  zc::OpCounters k = c.counters().op(op);
  if (k.bytes_sent != sent || k.bytes_received != received)
    fail(std::string(zc::op_type_name(op)) + " count " + std::to_string(count) + ": counted " +
         std::to_string(k.bytes_sent) + "/" + std::to_string(k.bytes_received) +
         " B sent/received, formula " + std::to_string(sent) + "/" + std::to_string(received));
  c.reset_counters();
}

float value(int r, size_t i) { return static_cast<float>(r) + static_cast<float>(i % 7); }
float sum(int n, size_t i) { return static_cast<float>(n * (n - 1) / 2 + n * (int)(i % 7)); }
size_t chunk_of(size_t count, int n, int i) { return zc::ring_chunk(count, n, i).count; }

void run_sizes(zc::Communicator& c, size_t count) {
  const int n = c.world_size(), r = c.rank();
  const uint64_t nn = static_cast<uint64_t>(n);
  // allreduce fp32 sum: rank-filled inputs sum to n(n-1)/2 (+ n (i%7)).
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = value(r, i);
  check_status(c.allreduce(std::span<float>(v), zc::ReduceOp::kSum));
  for (size_t i = 0; i < count; ++i) expect_eq("allreduce", count, i, v[i], sum(n, i));
  uint64_t b = count * 4;
  uint64_t sent =
      n == 1 ? 0 : 2 * b - 4 * (chunk_of(count, n, r) + chunk_of(count, n, (r + 1) % n));
  uint64_t recv =
      n == 1 ? 0 : 2 * b - 4 * (chunk_of(count, n, (r + n - 1) % n) + chunk_of(count, n, r));
  expect_bytes(c, zc::OpType::kAllreduce, count, sent, recv);
  // allreduce bf16 avg (exact: sums <= 30).
  std::vector<uint16_t> h(count);
  for (size_t i = 0; i < count; ++i) h[i] = zc::fp32_to_bf16_bits(value(r, i));
  check_status(c.allreduce(std::span<uint16_t>(h), zc::DType::kBFloat16, zc::ReduceOp::kAvg));
  for (size_t i = 0; i < count; ++i)
    expect_eq("allreduce bf16", count, i, zc::bf16_bits_to_fp32(h[i]),
              zc::bf16_bits_to_fp32(zc::fp32_to_bf16_bits(sum(n, i) / static_cast<float>(n))));
  c.reset_counters();
  // reduce_scatter of the buffer padded to n equal shards.
  size_t shard = zerotrain::shard_size(count, n);
  std::vector<float> in(shard * n, 0.0f), out(shard);
  for (size_t i = 0; i < count; ++i) in[i] = value(r, i);
  check_status(
      c.reduce_scatter(std::span<const float>(in), std::span<float>(out), zc::ReduceOp::kSum));
  for (size_t i = 0; i < shard; ++i) {
    size_t j = r * shard + i;
    expect_eq("reduce_scatter", count, i, out[i], j < count ? sum(n, j) : 0.0f);
  }
  expect_bytes(c, zc::OpType::kReduceScatter, count, (nn - 1) * shard * 4, (nn - 1) * shard * 4);
  // allgather of each rank's shard.
  std::vector<float> mine(shard, static_cast<float>(r * 3 + 1)), all(shard * n);
  check_status(c.allgather(std::span<const float>(mine), std::span<float>(all)));
  for (size_t i = 0; i < all.size(); ++i)
    expect_eq("allgather", count, i, all[i], static_cast<float>((i / shard) * 3 + 1));
  expect_bytes(c, zc::OpType::kAllgather, count, (nn - 1) * shard * 4, (nn - 1) * shard * 4);
  // broadcast from a size-dependent root along the chain.
  int root = static_cast<int>(count % nn);
  std::vector<float> bc(count, r == root ? 0.0f : -1.0f);
  if (r == root)
    for (size_t i = 0; i < count; ++i) bc[i] = static_cast<float>(i % 13);
  check_status(c.broadcast(std::span<float>(bc), root));
  for (size_t i = 0; i < count; ++i) expect_eq("broadcast", count, i, bc[i], i % 13);
  int pos = (r - root + n) % n;
  expect_bytes(c, zc::OpType::kBroadcast, count, n > 1 && pos < n - 1 ? b : 0,
               n > 1 && pos > 0 ? b : 0);
  // barrier: ceil(log2 n) one-byte rounds.
  check_status(c.barrier());
  uint64_t rounds = static_cast<uint64_t>(std::ceil(std::log2(n)));
  expect_bytes(c, zc::OpType::kBarrier, count, rounds, rounds);
}

int loop_allreduce(zc::Communicator& c, double seconds) {
  std::vector<float> v(1 << 16, 1.0f);
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  bool announced = false;
  while (std::chrono::steady_clock::now() < end) {
    check_status(c.allreduce(std::span<float>(v), zc::ReduceOp::kAvg));
    if (!announced) {
      std::printf("ready\n");
      std::fflush(stdout);
      announced = true;
    }
  }
  std::printf("zt_collective_worker: rank %d loop finished\n", c.rank());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto options = zc::comm_options_from_env();
  if (!options.ok()) fail(options.status().to_string());
  g_rank = options->rank;
  zerotrain::log::set_rank(g_rank);
  auto comm = zc::create_gloo_communicator(*options);
  if (!comm.ok()) fail(comm.status().to_string());
  zc::Communicator& c = **comm;
  if (argc == 3 && std::strcmp(argv[1], "--loop") == 0)
    return loop_allreduce(c, std::atof(argv[2]));
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1000003}}) run_sizes(c, count);
  // One more allreduce, for the bytes-on-the-wire figure in the summary.
  std::vector<float> total(1 << 20, 1.0f);
  check_status(c.allreduce(std::span<float>(total), zc::ReduceOp::kSum));
  uint64_t sent = c.counters().total().bytes_sent;
  uint64_t received = c.counters().total().bytes_received;
  for (size_t i = 0; i < total.size(); i += 4099)
    expect_eq("allreduce", total.size(), i, total[i], c.world_size());
  check_status(c.barrier());
  std::printf(
      "zt_collective_worker: rank %d/%d ok: allreduce (fp32, bf16), reduce_scatter, "
      "allgather, broadcast, barrier at sizes 0, 1, 7, 1000003 matched closed forms and "
      "byte formulas; 4 MiB allreduce sent %llu B, received %llu B\n",
      c.rank(), c.world_size(), static_cast<unsigned long long>(sent),
      static_cast<unsigned long long>(received));
  return 0;
}
