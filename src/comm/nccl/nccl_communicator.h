// NCCL backend: the Communicator for a CUDA device's memory (built with
// the CUDA backend, ZEROTRAIN_HAVE_NCCL). comm/factory.h chooses it for a
// GPU job unless ranks share a GPU (comm/backend_choice.h).
//   - Rendezvous: world size 1 needs no store; otherwise the job's store
//     (rendezvous.h: CommOptions::store, or rank 0's authenticated TCP
//     store), every rank announced (a timeout names the missing ranks),
//     rank 0's ncclGetUniqueId published there and read by the others,
//     then ncclCommInitRankConfig with blocking = 0, so init and every op
//     return at once and can be aborted.
//   - Buffers: the hooks take the device's memory as raw device pointers
//     (hook_device()); host memory (the span forms, host tensors) is
//     staged into device memory ("comm staging", comm/staging.h).
//   - Streams ("comm streams"): each collective runs on the device's
//     communication stream, which first waits on the compute stream (all
//     the caller enqueued there before the op started); after it the
//     compute stream waits on the communication stream, so later compute
//     sees the result.
//   - Watchdog: the communication thread records an event after the op and
//     polls it with ncclCommGetAsyncError. An asynchronous NCCL error, or
//     no completion within CommOptions::timeout, aborts the communicator
//     (ncclCommAbort) and fails the op with a Status naming the op, its size
//     and that a peer is dead or stalled; the broken-communicator rule of
//     communicator.h then holds. kAvg is ncclAvg; fp32, fp16 and bf16.
//   - Byte counters: what the Gloo algorithms of docs/algorithms.md move
//     for the same call (ring allreduce 2B - c_r - c_{r+1}, ...), so they
//     agree across backends; NCCL's own algorithm choice may move otherwise.
//   - Destruction: after shutdown(), ncclCommFinalize (bounded by the
//     timeout) and ncclCommDestroy; ncclCommAbort when that fails.
//
//   ZT_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> c, create_nccl_communicator(o, gpu));
//
// Thread-safety: as Communicator. `device` must outlive the communicator.
#pragma once

#include <memory>

#include "comm/backend_choice.h"
#include "comm/communicator.h"
#include "device/device.h"

namespace zerotrain::comm {

// InvalidArgument when `device` is not a CUDA device; NCCL's own error
// (Unavailable, InvalidArgument for "Duplicate GPU detected", Timeout
// naming the missing ranks) when init fails.
StatusOr<std::unique_ptr<Communicator>> create_nccl_communicator(const CommOptions& options,
                                                                 device::Device& device);
// This rank's GPU for the backend choice: the host name and the device's
// PCI bus id (InvalidArgument when `device` is not a CUDA device).
StatusOr<RankGpu> rank_gpu_of(device::Device& device);
// The linked library's ncclGetVersion (22809 for 2.28.9); 0 when it fails.
int nccl_runtime_version();

}  // namespace zerotrain::comm
