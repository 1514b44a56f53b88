// The ZeRO bench (issue #4): one stage × offload × overlap_comm case of the
// real training path (ds_config, GptModel, Engine) at the job's world size,
// as `zerotrain run --num_gpus 2 -- zt_zero_bench --stage 2 --overlap`
// runs it: step time, each rank's peak RSS (VmHWM, so one case a process),
// the engine's device/host model-state bytes and the wire bytes of a step;
// with `decompose`, also the same steps' compute alone (an engine over a
// NullCommunicator: the same per-rank work, no communication) and
// communication alone (the step's recorded collectives replayed without
// compute), so overlap is judged against max(compute, communication)
// measured in the same run.
//
//   ZeroCase c{.stage = 2, .offload = false, .overlap = true, .decompose = true};
//   ZT_ASSIGN_OR_RETURN(ZeroResult r, run_zero_case(c, gloo.get()));
//   std::puts(zero_result_json(r).dump().c_str());
//
// Thread-safety: run_zero_case drives the engines from the calling thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/status.h"

namespace zerotrain::bench {

struct ZeroCase {
  std::string model = "gpt2-small-ish";
  bool bf16 = true;
  int stage = 0;
  bool offload = false;  // offload_optimizer cpu (stage 3: and offload_param)
  bool overlap = false;  // overlap_comm
  bool decompose = false;  // also time compute alone and communication alone
  int64_t B = 1, T = 256;  // per rank
  int64_t bucket = 2'000'000;  // reduce_bucket_size = allgather_bucket_size (elements)
  int warmup = 1, steps = 4;
  uint64_t seed = 1234;
};

struct ZeroResult {
  ZeroCase c;
  int ranks = 1, threads = 1;
  int64_t numel = 0;
  std::vector<double> step_seconds;     // slowest rank per step
  std::vector<double> compute_seconds;  // decompose: NullCommunicator steps
  std::vector<double> comm_seconds;     // decompose: replayed collectives per step
  // decompose: CPU seconds (user + system, all threads) this rank used in
  // each compute-alone and communication-alone step.
  std::vector<double> compute_cpu_seconds, comm_cpu_seconds;
  int cores = 1;  // hardware threads of the machine
  int64_t compute_skipped = 0;          // steps the compute-alone engine skipped (should be 0)
  int collectives_per_step = 0;
  std::vector<double> vm_hwm_mib;  // per rank, after the real steps
  int64_t device_bytes = 0, host_bytes = 0;  // rank 0: memory() device_total / host_total
  int64_t model_state_device = 0, model_state_host = 0;  // rank 0, buffers included
  uint64_t wire_bytes_sent = 0;  // rank 0, one step
  double loss_first = 0, loss_last = 0;
};

// The ds_config text of a case.
std::string zero_ds_config(const ZeroCase& c);

// All ranks call it. InvalidArgument for an unknown model, stage 0 with
// offload, or steps < 1.
StatusOr<ZeroResult> run_zero_case(const ZeroCase& c, comm::Communicator* comm);

// One JSON object: the case, step_seconds / compute_seconds / comm_seconds
// {median, values}, overlap_ratio = median step / max(median compute,
// median comm) and floor_ratio = median step / max(compute, comm,
// cpu_floor_seconds) (decompose only), vm_hwm_mib per rank, bytes, losses.
nlohmann::json zero_result_json(const ZeroResult& r);

// The shortest step the machine's CPUs allow when compute and communication
// overlap: (compute + communication CPU seconds of a rank) / (cores per
// rank, at least 1). On 2 cores at 2 ranks, communication that keeps a
// core busy (loopback TCP copies, checksums, reductions) cannot hide
// behind compute. 0 without decompose.
double cpu_floor_seconds(const ZeroResult& r);

// This process's peak resident set (VmHWM of /proc/self/status), MiB; 0 if unknown.
double vm_hwm_mib();

}  // namespace zerotrain::bench
