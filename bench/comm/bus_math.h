// The arithmetic of the collective bench, kept free of communication so it
// is unit-tested: nccl-tests' bus-bandwidth factors, the per-rank payload
// bytes of our ring algorithms (docs/algorithms.md), the size sweep, and the
// exact fp32 values the correctness check fills and expects.
//
// "size" is nccl-tests' convention: the whole buffer of an allreduce, the
// input (all N chunks) of a reduce_scatter, the output of an allgather.
// algbw = size / time; busbw = algbw x factor, where factor is 2(N-1)/N for
// allreduce (each byte crosses N-1 links twice: reduce-scatter + allgather
// phase) and (N-1)/N for reduce_scatter and allgather, so busbw compares to
// the link speed whatever N is.
//
//   double f = bus_factor(BenchOp::kAllreduce, 2);  // 1.0
//   WireBytes w = expected_wire_bytes(BenchOp::kAllreduce, 1024, 4, 2, 0);  // 4096 sent
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace zerotrain::bench {

enum class BenchOp { kAllreduce, kReduceScatter, kAllgather };

const char* bench_op_name(BenchOp op);  // "allreduce", "reduce_scatter", "allgather"

double bus_factor(BenchOp op, int world_size);

// Elements of the size-defining buffer for `bytes`: bytes / elem_size,
// rounded down to a multiple of world_size for reduce_scatter/allgather so
// the chunks are equal (at least world_size elements).
int64_t bench_count(BenchOp op, int64_t bytes, int world_size, size_t elem_size);

// Payload bytes `rank` sends and receives in one op over `count` elements of
// the size-defining buffer. Allreduce: 2B - c_r - c_{r+1} sent and
// 2B - c_{r-1} - c_r received, with c_i the ring chunks; reduce_scatter and
// allgather: (N-1) * B/N each way. N = 1 moves nothing.
struct WireBytes {
  uint64_t sent = 0;
  uint64_t received = 0;
};
WireBytes expected_wire_bytes(BenchOp op, int64_t count, size_t elem_size, int world_size,
                              int rank);

// What the communicator's counters said for a series of calls of one op.
struct MovedBytes {
  uint64_t calls = 0, sent = 0, received = 0;
};

// OK if `moved` is exactly `iters` calls of `per_call` bytes; Internal naming
// `what`, the counted and the formula bytes otherwise.
Status check_wire_bytes(const std::string& what, const MovedBytes& moved, int iters,
                        const WireBytes& per_call);

// min_bytes, min_bytes*factor, ... up to and including max_bytes.
std::vector<int64_t> size_sweep(int64_t min_bytes, int64_t max_bytes, int64_t factor);

// Correctness values, exact in fp32 (small integers). The base pattern of
// global element g in iteration `it` is ((g + it) mod 64) + 1, so a stale
// result from the previous iteration is caught.
//   allreduce / reduce_scatter input on rank r: (r + 1) * base(g)
//     result: base(g) * N(N+1)/2
//   allgather input on rank r, element j: base(r*C + j) + r
//     output element g (chunk q = g / C): base(g) + q
float reduce_input_value(int rank, int64_t g, int iteration);
float reduce_expected_value(int world_size, int64_t g, int iteration);
float gather_value(int64_t chunk, int64_t g, int iteration);

}  // namespace zerotrain::bench
