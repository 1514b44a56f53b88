// Bus-bandwidth factors, wire-byte formulas, sweep and check values.
#include "comm/bus_math.h"

#include "comm/types.h"

namespace zerotrain::bench {

const char* bench_op_name(BenchOp op) {
  switch (op) {
    case BenchOp::kAllreduce:
      return "allreduce";
    case BenchOp::kReduceScatter:
      return "reduce_scatter";
    case BenchOp::kAllgather:
      return "allgather";
  }
  return "?";
}

double bus_factor(BenchOp op, int world_size) {
  const double n = world_size;
  return op == BenchOp::kAllreduce ? 2.0 * (n - 1) / n : (n - 1) / n;
}

int64_t bench_count(BenchOp op, int64_t bytes, int world_size, size_t elem_size) {
  int64_t count = bytes / static_cast<int64_t>(elem_size);
  if (op == BenchOp::kAllreduce) return count;
  count -= count % world_size;
  return count < world_size ? world_size : count;
}

WireBytes expected_wire_bytes(BenchOp op, int64_t count, size_t elem_size, int world_size,
                              int rank) {
  const int n = world_size;
  if (n <= 1) return {};
  const uint64_t total = static_cast<uint64_t>(count) * elem_size;
  if (op != BenchOp::kAllreduce) {
    const uint64_t moved = (total / n) * (n - 1);
    return {moved, moved};
  }
  const auto chunk = [&](int i) {
    return comm::ring_chunk(static_cast<size_t>(count), n, ((i % n) + n) % n).count * elem_size;
  };
  return {2 * total - chunk(rank) - chunk(rank + 1), 2 * total - chunk(rank - 1) - chunk(rank)};
}

Status check_wire_bytes(const std::string& what, const MovedBytes& moved, int iters,
                        const WireBytes& per_call) {
  const uint64_t n = static_cast<uint64_t>(iters);
  if (moved.calls == n && moved.sent == per_call.sent * n &&
      moved.received == per_call.received * n) {
    return ok_status();
  }
  return internal_error(what + ": counters say " + std::to_string(moved.sent) + " B sent, " +
                        std::to_string(moved.received) + " B received in " +
                        std::to_string(moved.calls) + " calls; formula " +
                        std::to_string(per_call.sent * n) + " and " +
                        std::to_string(per_call.received * n) + " B in " + std::to_string(iters));
}

std::vector<int64_t> size_sweep(int64_t min_bytes, int64_t max_bytes, int64_t factor) {
  std::vector<int64_t> sizes;
  if (min_bytes <= 0 || factor < 2) return sizes;
  for (int64_t s = min_bytes; s <= max_bytes; s *= factor) sizes.push_back(s);
  return sizes;
}

namespace {
float base(int64_t g, int iteration) { return static_cast<float>(((g + iteration) & 63) + 1); }
}  // namespace

float reduce_input_value(int rank, int64_t g, int iteration) {
  return static_cast<float>(rank + 1) * base(g, iteration);
}

float reduce_expected_value(int world_size, int64_t g, int iteration) {
  return base(g, iteration) * static_cast<float>(world_size * (world_size + 1) / 2);
}

float gather_value(int64_t chunk, int64_t g, int iteration) {
  return base(g, iteration) + static_cast<float>(chunk);
}

}  // namespace zerotrain::bench
