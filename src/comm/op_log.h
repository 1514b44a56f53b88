// The comms logger (DeepSpeed's `comms_logger`): every collective's latency
// on this rank, keyed by op and message size, with algorithm and bus
// bandwidth as DeepSpeed (after nccl-tests) defines them, and the summary
// table DeepSpeed's log_summary prints.
//
//   OpLog log;
//   log.add(OpType::kAllreduce, 4096, 0.25);   // bytes, milliseconds
//   std::cout << log.summary(world_size);
//
// Message size is what DeepSpeed records: the tensor of an all-reduce or
// broadcast, and one rank's part of an all-gather or reduce-scatter.
//
// Thread-safety: none; the Communicator guards it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "comm/types.h"

namespace zerotrain::comm {

// DeepSpeed's op names: "all_reduce", "reduce_scatter", "all_gather",
// "broadcast", "barrier".
const char* deepspeed_op_name(OpType op);

// Algorithm and bus bandwidth in Gbps of one op moving `bytes` in `ms` at
// world size n (nccl-tests' definitions, as DeepSpeed's calc_bw_log):
// all-reduce moves 2·size (bus: 2(n-1)/n·size); all-gather and
// reduce-scatter n·size (bus: (n-1)/n of it); broadcast and barrier size.
std::pair<double, double> op_bandwidth_gbps(OpType op, uint64_t bytes, double ms, int n);

// The mean of the middle values: the `fraction` lowest and highest
// (rounded) left out, as DeepSpeed's trim_mean.
double trim_mean(std::vector<double> values, double fraction);

// "4.0 KB", "1.5 MB": DeepSpeed's convert_size (powers of 1024, two decimals).
std::string deepspeed_size(uint64_t bytes);

class OpLog {
 public:
  struct Record {
    int count = 0;
    std::vector<double> latency_ms, algbw_gbps, busbw_gbps;
  };
  explicit OpLog(int world_size) : world_size_(world_size) {}

  void add(OpType op, uint64_t bytes, double ms);
  // "rank=0 | comm op: all_reduce | time (ms): 0.25 | msg size: 4.0 KB | algbw (Gbps): ..."
  std::string line(int rank, OpType op, uint64_t bytes, double ms) const;
  // DeepSpeed's log_summary table: a row per op and message size with the
  // count, total and (10%-trimmed) mean latency, algbw and busbw.
  std::string summary() const;
  const std::map<OpType, std::map<uint64_t, Record>>& records() const { return records_; }

 private:
  int world_size_;
  std::map<OpType, std::map<uint64_t, Record>> records_;
};

}  // namespace zerotrain::comm
