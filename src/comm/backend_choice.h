// Which backend moves a GPU job's tensors: NCCL, or Gloo with host staging
// (comm/staging.h). ZEROTRAIN_COMM_BACKEND = auto (default) | nccl | gloo.
// auto takes NCCL unless the build has none or two ranks of the job share
// one GPU (same host, same PCI bus id): NCCL refuses that ("Duplicate GPU
// detected", NVIDIA/nccl#418), so the job runs on staged Gloo instead.
// The decision is a pure function of every rank's (host, bus id), so every
// rank reaches the same one; gather_rank_gpus collects the pairs through
// the job's store.
//
//   std::vector<RankGpu> gpus = {{"node1", "0000:19:00.0"}, {"node1", "0000:19:00.0"}};
//   StatusOr<BackendChoice> c = choose_gpu_backend(BackendPreference::kAuto, gpus, true);
//   // c->backend == GpuBackend::kGloo,
//   // c->reason  == "ranks 0 and 1 share GPU 0000:19:00.0 on node1 ..."
//
// Thread-safety: pure functions, the environment read once per call, and
// gather_rank_gpus as the Store.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "comm/communicator.h"
#include "comm/store/store.h"
#include "core/status.h"

namespace zerotrain::comm {

enum class GpuBackend { kNccl, kGloo };
enum class BackendPreference { kAuto, kNccl, kGloo };

const char* gpu_backend_name(GpuBackend b);  // "nccl", "gloo"
// "auto", "nccl", "gloo"; InvalidArgument naming ZEROTRAIN_COMM_BACKEND else.
StatusOr<BackendPreference> parse_backend_preference(std::string_view text);
// ZEROTRAIN_COMM_BACKEND (unset: kAuto).
StatusOr<BackendPreference> backend_preference_from_env();

// Where one rank's GPU is: its host name and the GPU's PCI bus id.
struct RankGpu {
  std::string host;
  std::string pci_bus_id;
};
// "host\tbus id" and back, as published through the store.
std::string encode_rank_gpu(const RankGpu& g);
StatusOr<RankGpu> decode_rank_gpu(std::string_view text);

// Every rank's RankGpu, by rank: each publishes `mine` under a fresh key
// space of options.group in `store` and waits for the others (Timeout
// naming the ranks that did not arrive, after options.timeout).
StatusOr<std::vector<RankGpu>> gather_rank_gpus(Store& store, const CommOptions& options,
                                                const RankGpu& mine);

struct BackendChoice {
  GpuBackend backend = GpuBackend::kNccl;
  std::string reason;  // one sentence, for rank 0's log line
};

// The backend for a job whose rank r runs on gpus[r]. Forcing nccl where
// the build has none is Unavailable; forcing it where ranks share a GPU is
// InvalidArgument naming them (NCCL would refuse at init).
StatusOr<BackendChoice> choose_gpu_backend(BackendPreference preference,
                                           const std::vector<RankGpu>& gpus, bool nccl_built);

}  // namespace zerotrain::comm
