// Ring and chain collectives over gloo unbound buffers (docs/algorithms.md).
// Each step posts its receive and send, then waits for both with the
// communicator's timeout; a gloo exception becomes a Status naming the op,
// its sizes and the peer.
#include <gloo/common/error.h>

#include <cstring>

#include "comm/gloo_backend.h"
#include "comm/reduce.h"

namespace zerotrain::comm {
namespace {

using Buffer = gloo::transport::UnboundBuffer;

int mod(int a, int n) { return ((a % n) + n) % n; }

constexpr size_t kBroadcastSegment = 1 << 20;

// Issues and waits for the transfers of one collective.
class Stepper {
 public:
  Stepper(GlooCommunicator& comm, OpType type, std::string desc)
      : comm_(comm), type_(type), desc_(std::move(desc)), base_(comm.next_slot_base()) {}

  Status post_recv(Buffer& b, int peer, uint64_t step, size_t off, size_t len) {
    return guard(peer, "receive from", [&] { b.recv(peer, base_ + step, off, len); });
  }
  Status post_send(Buffer& b, int peer, uint64_t step, size_t off, size_t len) {
    return guard(peer, "send to", [&] { b.send(peer, base_ + step, off, len); });
  }
  Status wait_recv(Buffer& b, int peer, size_t len) {
    ZT_RETURN_IF_ERROR(guard(peer, "receive from", [&] { check(b.waitRecv(nullptr, wait_ms())); }));
    comm_.count(type_, 0, len);
    return ok_status();
  }
  Status wait_send(Buffer& b, int peer, size_t len) {
    ZT_RETURN_IF_ERROR(guard(peer, "send to", [&] { check(b.waitSend(nullptr, wait_ms())); }));
    comm_.count(type_, len, 0);
    return ok_status();
  }
  // Sends [soff, soff+slen) of `s` to `to` while receiving rlen bytes at
  // roff of `r` from `from`; zero-length sides are skipped (both ends agree).
  Status exchange(uint64_t step, Buffer& s, int to, size_t soff, size_t slen, Buffer& r, int from,
                  size_t roff, size_t rlen) {
    if (rlen > 0) ZT_RETURN_IF_ERROR(post_recv(r, from, step, roff, rlen));
    if (slen > 0) ZT_RETURN_IF_ERROR(post_send(s, to, step, soff, slen));
    if (rlen > 0) ZT_RETURN_IF_ERROR(wait_recv(r, from, rlen));
    if (slen > 0) ZT_RETURN_IF_ERROR(wait_send(s, to, slen));
    return ok_status();
  }

 private:
  static void check(bool completed) {
    if (!completed) throw gloo::IoException("transfer aborted");
  }
  // The timeout bounds each wait, i.e. time without progress.
  std::chrono::milliseconds wait_ms() const { return comm_.timeout(); }

  template <typename F>
  Status guard(int peer, const char* direction, F&& f) {
    try {
      f();
      return ok_status();
    } catch (const std::exception& e) {
      return comm_.fail(desc_, peer, direction, e.what());
    }
  }

  GlooCommunicator& comm_;
  OpType type_;
  std::string desc_;
  uint64_t base_;
};

std::string describe(const char* op, size_t bytes, size_t count, DType dtype) {
  return std::string(op) + " of " + std::to_string(bytes) + " bytes (" + std::to_string(count) +
         " x " + dtype_name(dtype) + ")";
}

}  // namespace

Status GlooCommunicator::do_allreduce(std::span<std::byte> data, DType dtype, ReduceOp op) {
  ZT_RETURN_IF_ERROR(usable());
  const size_t es = dtype_size(dtype), count = data.size() / es;
  const int n = world_size(), r = rank();
  const int divisor = op == ReduceOp::kAvg ? n : 1;
  if (n == 1 || count == 0) {
    divide_inplace(data.data(), count, dtype, divisor);
    return ok_status();
  }
  Stepper st(*this, OpType::kAllreduce, describe("allreduce", data.size(), count, dtype));
  scratch_.resize(ring_chunk(count, n, 0).count * es);  // chunk 0 is the largest
  auto send = buffer(data.data(), data.size());
  auto into_data = buffer(data.data(), data.size());
  auto into_tmp = buffer(scratch_.data(), scratch_.size());
  const int right = mod(r + 1, n), left = mod(r - 1, n);
  // Reduce-scatter: after n-1 steps rank r holds the full reduction of chunk r.
  for (int s = 0; s < n - 1; ++s) {
    PartitionRange sc = ring_chunk(count, n, mod(r - s - 1, n));
    PartitionRange rc = ring_chunk(count, n, mod(r - s - 2, n));
    ZT_RETURN_IF_ERROR(st.exchange(s, *send, right, sc.offset * es, sc.count * es, *into_tmp, left,
                                   0, rc.count * es));
    std::byte* acc = data.data() + rc.offset * es;
    reduce_combine(acc, scratch_.data(), acc, rc.count, dtype, op, s == n - 2 ? divisor : 1);
  }
  // All-gather: pass the finished chunks around the ring.
  for (int s = 0; s < n - 1; ++s) {
    PartitionRange sc = ring_chunk(count, n, mod(r - s, n));
    PartitionRange rc = ring_chunk(count, n, mod(r - s - 1, n));
    ZT_RETURN_IF_ERROR(st.exchange(n + s, *send, right, sc.offset * es, sc.count * es, *into_data,
                                   left, rc.offset * es, rc.count * es));
  }
  return ok_status();
}

Status GlooCommunicator::do_reduce_scatter(std::span<const std::byte> input,
                                           std::span<std::byte> output, DType dtype,
                                           ReduceOp op) {
  ZT_RETURN_IF_ERROR(usable());
  const size_t chunk = output.size(), es = dtype_size(dtype), count = chunk / es;
  const int n = world_size(), r = rank();
  const int divisor = op == ReduceOp::kAvg ? n : 1;
  const std::byte* in = input.data();
  if (n == 1 || count == 0) {
    if (output.data() != in) std::memmove(output.data(), in, chunk);
    divide_inplace(output.data(), count, dtype, divisor);
    return ok_status();
  }
  Stepper st(*this, OpType::kReduceScatter,
             "reduce_scatter of " + std::to_string(input.size()) + " bytes into " +
                 std::to_string(chunk) + " (" + std::to_string(count) + " x " +
                 dtype_name(dtype) + ")");
  scratch_.resize(2 * chunk);
  std::byte* tmp = scratch_.data();
  std::byte* acc = scratch_.data() + chunk;
  // Step 0 sends raw input; later steps send the running partial sum.
  auto send_input = buffer(const_cast<std::byte*>(in), input.size());
  auto send_acc = buffer(acc, chunk);
  auto into_tmp = buffer(tmp, chunk);
  const int right = mod(r + 1, n), left = mod(r - 1, n);
  for (int s = 0; s < n - 1; ++s) {
    int send_idx = mod(r - s - 1, n), recv_idx = mod(r - s - 2, n);
    Buffer& src = s == 0 ? *send_input : *send_acc;
    size_t soff = s == 0 ? static_cast<size_t>(send_idx) * chunk : 0;
    ZT_RETURN_IF_ERROR(st.exchange(s, src, right, soff, chunk, *into_tmp, left, 0, chunk));
    bool last = s == n - 2;  // recv_idx == r: this rank's own chunk
    reduce_combine(last ? output.data() : acc, tmp, in + static_cast<size_t>(recv_idx) * chunk,
                   count, dtype, op, last ? divisor : 1);
  }
  return ok_status();
}

Status GlooCommunicator::do_allgather(std::span<const std::byte> input,
                                      std::span<std::byte> output) {
  ZT_RETURN_IF_ERROR(usable());
  const size_t chunk = input.size();
  const int n = world_size(), r = rank();
  std::byte* own = output.data() + static_cast<size_t>(r) * chunk;
  if (own != input.data() && chunk > 0) std::memmove(own, input.data(), chunk);
  if (n == 1 || chunk == 0) return ok_status();
  Stepper st(*this, OpType::kAllgather,
             "allgather of " + std::to_string(chunk) + " bytes into " +
                 std::to_string(output.size()));
  auto send = buffer(output.data(), output.size());
  auto into = buffer(output.data(), output.size());
  const int right = mod(r + 1, n), left = mod(r - 1, n);
  for (int s = 0; s < n - 1; ++s) {
    size_t soff = static_cast<size_t>(mod(r - s, n)) * chunk;
    size_t roff = static_cast<size_t>(mod(r - s - 1, n)) * chunk;
    ZT_RETURN_IF_ERROR(st.exchange(s, *send, right, soff, chunk, *into, left, roff, chunk));
  }
  return ok_status();
}

// Pipelined chain root -> root+1 -> ... -> root-1 in 1 MiB segments: every
// rank but the last forwards each segment as soon as it has arrived.
Status GlooCommunicator::do_broadcast(std::span<std::byte> data, int root) {
  ZT_RETURN_IF_ERROR(usable());
  const int n = world_size(), r = rank();
  const size_t bytes = data.size();
  if (n == 1 || bytes == 0) return ok_status();
  Stepper st(*this, OpType::kBroadcast,
             "broadcast of " + std::to_string(bytes) + " bytes from root " + std::to_string(root));
  const int pos = mod(r - root, n), next = mod(r + 1, n), prev = mod(r - 1, n);
  auto send = buffer(data.data(), bytes);
  auto into = buffer(data.data(), bytes);
  std::vector<size_t> pending_sends;
  for (size_t off = 0, seg = 0; off < bytes; off += kBroadcastSegment, ++seg) {
    size_t len = std::min(kBroadcastSegment, bytes - off);
    if (pos > 0) {
      ZT_RETURN_IF_ERROR(st.post_recv(*into, prev, seg, off, len));
      ZT_RETURN_IF_ERROR(st.wait_recv(*into, prev, len));
    }
    if (pos < n - 1) {
      ZT_RETURN_IF_ERROR(st.post_send(*send, next, seg, off, len));
      pending_sends.push_back(len);
    }
  }
  for (size_t len : pending_sends) ZT_RETURN_IF_ERROR(st.wait_send(*send, next, len));
  return ok_status();
}

// Dissemination barrier: in round k every rank signals rank + 2^k and hears
// from rank - 2^k; after ceil(log2 n) rounds everyone has (transitively)
// heard from everyone.
Status GlooCommunicator::do_barrier() {
  ZT_RETURN_IF_ERROR(usable());
  const int n = world_size(), r = rank();
  if (n == 1) return ok_status();
  Stepper st(*this, OpType::kBarrier, "barrier");
  auto send = buffer(&token_send_, 1);
  auto into = buffer(&token_recv_, 1);
  uint64_t round = 0;
  for (int d = 1; d < n; d *= 2, ++round)
    ZT_RETURN_IF_ERROR(st.exchange(round, *send, mod(r + d, n), 0, 1, *into, mod(r - d, n), 0, 1));
  return ok_status();
}

}  // namespace zerotrain::comm
