// The Gloo backend's collectives (docs/algorithms.md): pipelined rings for
// allreduce, reduce_scatter and allgather, a pipelined chain for broadcast,
// a dissemination barrier.
#include <algorithm>
#include <cstring>

#include "comm/gloo/gloo_backend.h"
#include "comm/gloo/reduce.h"
#include "comm/gloo/ring_run.h"

namespace zerotrain::comm {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

constexpr size_t kBroadcastSegment = 1 << 20;

std::string describe(const char* op, size_t bytes, size_t count, DType dtype) {
  return std::string(op) + " of " + std::to_string(bytes) + " bytes (" + std::to_string(count) +
         " x " + std::string(dtype_name(dtype)) + ")";
}

}  // namespace

Status GlooCommunicator::do_allreduce(std::span<std::byte> data, DType dtype, ReduceOp op) {
  ZT_RETURN_IF_ERROR(usable());
  const size_t es = dtype_size(dtype), count = data.size() / es;
  const int n = world_size();
  if (n == 1 || count == 0) {
    divide_inplace(data.data(), count, dtype, op == ReduceOp::kAvg ? n : 1);
    return ok_status();
  }
  RingRun ring(*this, OpType::kAllreduce, describe("allreduce", data.size(), count, dtype),
               RingLayout::make(es, count, n, 0), scratch_);
  ZT_RETURN_IF_ERROR(ring.reduce_scatter(data.data(), nullptr, dtype, op, /*in_place=*/true,
                                         /*then_allgather=*/true));
  ZT_RETURN_IF_ERROR(ring.allgather(data.data()));
  return ring.finish();
}

Status GlooCommunicator::do_reduce_scatter(std::span<const std::byte> input,
                                           std::span<std::byte> output, DType dtype, ReduceOp op) {
  ZT_RETURN_IF_ERROR(usable());
  const size_t chunk = output.size(), es = dtype_size(dtype), count = chunk / es;
  const int n = world_size();
  // Sends only read the input; gloo's buffer type is non-const.
  std::byte* in = const_cast<std::byte*>(input.data());
  if (n == 1 || count == 0) {
    if (output.data() != in && chunk > 0) std::memmove(output.data(), in, chunk);
    divide_inplace(output.data(), count, dtype, op == ReduceOp::kAvg ? n : 1);
    return ok_status();
  }
  RingRun ring(*this, OpType::kReduceScatter,
               "reduce_scatter of " + std::to_string(input.size()) + " bytes into " +
                   std::to_string(chunk) + " (" + std::to_string(count) + " x " +
                   std::string(dtype_name(dtype)) + ")",
               RingLayout::make(es, count * n, n, count), scratch_);
  ZT_RETURN_IF_ERROR(ring.reduce_scatter(in, output.data(), dtype, op, /*in_place=*/false,
                                         /*then_allgather=*/false));
  return ring.finish();
}

Status GlooCommunicator::do_allgather(std::span<const std::byte> input,
                                      std::span<std::byte> output) {
  ZT_RETURN_IF_ERROR(usable());
  const size_t chunk = input.size();
  const int n = world_size(), r = rank();
  std::byte* own = output.data() + static_cast<size_t>(r) * chunk;
  if (own != input.data() && chunk > 0) std::memmove(own, input.data(), chunk);
  if (n == 1 || chunk == 0) return ok_status();
  // Byte-granular layout: allgather moves bytes, whatever the dtype.
  RingRun ring(
      *this, OpType::kAllgather,
      "allgather of " + std::to_string(chunk) + " bytes into " + std::to_string(output.size()),
      RingLayout::make(1, chunk * n, n, chunk), scratch_);
  ZT_RETURN_IF_ERROR(ring.allgather(output.data()));
  return ring.finish();
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
  SendBuffer send;
  send.buf = buffer(data.data(), bytes);
  auto into = buffer(data.data(), bytes);
  for (size_t off = 0, seg = 0; off < bytes; off += kBroadcastSegment, ++seg) {
    size_t len = std::min(kBroadcastSegment, bytes - off);
    if (pos > 0) {
      ZT_RETURN_IF_ERROR(st.post_recv(*into, prev, seg, off, len));
      ZT_RETURN_IF_ERROR(st.wait_recv(*into, prev, len));
    }
    if (pos < n - 1) ZT_RETURN_IF_ERROR(st.post_send(send, next, seg, off, len));
  }
  return st.drain(send, next);
}

// Dissemination barrier: in round k every rank signals rank + 2^k and hears
// from rank - 2^k; after ceil(log2 n) rounds everyone has (transitively)
// heard from everyone.
Status GlooCommunicator::do_barrier() {
  ZT_RETURN_IF_ERROR(usable());
  const int n = world_size(), r = rank();
  if (n == 1) return ok_status();
  Stepper st(*this, OpType::kBarrier, "barrier");
  SendBuffer send;
  send.buf = buffer(&token_send_, 1);
  auto into = buffer(&token_recv_, 1);
  uint64_t round = 0;
  for (int d = 1; d < n; d *= 2, ++round)
    ZT_RETURN_IF_ERROR(st.exchange(round, send, mod(r + d, n), 0, 1, *into, mod(r - d, n), 0, 1));
  return ok_status();
}

}  // namespace zerotrain::comm
