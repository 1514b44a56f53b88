// Value types of the comm layer: element dtypes, reduce ops, collective kinds,
// byte counters, and the pure partition arithmetic ZeRO uses to split a flat
// buffer into world_size shards (no communication here, so it is exhaustively
// unit-testable).
//
//   PartitionRange r = partition_range(/*count=*/10, /*world_size=*/4, /*rank=*/3);
//   // r.offset == 9, r.count == 1 (shards of 3, 3, 3, 1; padded to 12)
//
// Thread-safety: value types and pure functions only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace zerotrain::comm {

// Element types a collective can reduce (core/dtype.h). 16-bit types are
// stored as raw uint16_t and reduced in fp32, rounded to nearest even after
// each step.
using zerotrain::DType;
using zerotrain::dtype_name;  // "fp32", "fp16", "bf16"
using zerotrain::dtype_size;

enum class ReduceOp { kSum, kAvg, kMax, kMin };

// Collective kinds, used to index per-op byte counters.
enum class OpType { kAllreduce, kReduceScatter, kAllgather, kBroadcast, kBarrier };
inline constexpr int kNumOpTypes = 5;

const char* reduce_op_name(ReduceOp op);  // "sum", "avg", "max", "min"
const char* op_type_name(OpType op);      // "allreduce", "reduce_scatter", ...

// Bytes this rank moved for one kind of collective (payload only; gloo's
// per-message headers are not counted).
struct OpCounters {
  uint64_t calls = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
};

struct CommCounters {
  std::array<OpCounters, kNumOpTypes> per_op{};
  // Wire checksums (4 bytes per payload message), kept apart so the
  // payload counters above stay exact.
  uint64_t checksum_bytes_sent = 0;
  uint64_t checksum_bytes_received = 0;

  const OpCounters& op(OpType type) const { return per_op[static_cast<int>(type)]; }
  OpCounters& op(OpType type) { return per_op[static_cast<int>(type)]; }
  OpCounters total() const;
  // "allreduce: 3 calls, sent 6144 B, received 6144 B; ..." (non-zero ops only)
  std::string to_string() const;
};

// Ring chunking used inside allreduce (not ZeRO's padded shards, which are
// core/range.h's shard_size / padded_numel / rank_range): chunk i of
// `count` elements over n ranks has count/n elements plus one for the first
// count%n chunks, so no padding travels on the wire.
struct RingChunk {
  size_t offset = 0;
  size_t count = 0;
};
constexpr RingChunk ring_chunk(size_t count, int n, int i) {
  size_t q = count / static_cast<size_t>(n);
  size_t rem = count % static_cast<size_t>(n);
  size_t idx = static_cast<size_t>(i);
  return {idx * q + (idx < rem ? idx : rem), q + (idx < rem ? 1 : 0)};
}

}  // namespace zerotrain::comm
