// Names of comm enums and counter formatting.
#include "comm/types.h"

#include <sstream>

namespace zerotrain::comm {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAvg:
      return "avg";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
  }
  return "?";
}

const char* op_type_name(OpType op) {
  switch (op) {
    case OpType::kAllreduce:
      return "allreduce";
    case OpType::kReduceScatter:
      return "reduce_scatter";
    case OpType::kAllgather:
      return "allgather";
    case OpType::kBroadcast:
      return "broadcast";
    case OpType::kBarrier:
      return "barrier";
  }
  return "?";
}

OpCounters CommCounters::total() const {
  OpCounters sum;
  for (const OpCounters& c : per_op) {
    sum.calls += c.calls;
    sum.bytes_sent += c.bytes_sent;
    sum.bytes_received += c.bytes_received;
  }
  return sum;
}

std::string CommCounters::to_string() const {
  std::ostringstream out;
  for (int i = 0; i < kNumOpTypes; ++i) {
    const OpCounters& c = per_op[i];
    if (c.calls == 0) continue;
    if (out.tellp() > 0) out << "; ";
    out << op_type_name(static_cast<OpType>(i)) << ": " << c.calls << " calls, sent "
        << c.bytes_sent << " B, received " << c.bytes_received << " B";
  }
  return out.str();
}

}  // namespace zerotrain::comm
