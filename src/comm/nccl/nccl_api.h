// NCCL's entry points, loaded on first use (core/shared_library.h): the
// binary does not link libnccl (218 MB), so a CPU run never maps it and a
// CUDA build starts where it is absent. Types and constants come from
// nccl.h; only the calls go through this table.
//
//   ZT_ASSIGN_OR_RETURN(const NcclApi* nccl, nccl_api());
//   nccl->all_reduce(send, recv, n, ncclFloat32, ncclSum, comm, stream);
//
// Thread-safety: the table is built once and read-only after.
#pragma once

#include <nccl.h>

#include "core/status.h"

namespace zerotrain::comm {

struct NcclApi {
  decltype(&::ncclGetVersion) get_version = nullptr;
  decltype(&::ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&::ncclCommInitRankConfig) comm_init_rank_config = nullptr;
  decltype(&::ncclCommGetAsyncError) comm_get_async_error = nullptr;
  decltype(&::ncclCommFinalize) comm_finalize = nullptr;
  decltype(&::ncclCommDestroy) comm_destroy = nullptr;
  decltype(&::ncclCommAbort) comm_abort = nullptr;
  decltype(&::ncclGetErrorString) get_error_string = nullptr;
  decltype(&::ncclGetLastError) get_last_error = nullptr;
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  decltype(&::ncclReduceScatter) reduce_scatter = nullptr;
  decltype(&::ncclAllGather) all_gather = nullptr;
  decltype(&::ncclBroadcast) broadcast = nullptr;
};

// The loaded table (libnccl.so.<NCCL_MAJOR>); Unavailable naming the
// library and the loader's reason, on every call after a failure.
StatusOr<const NcclApi*> nccl_api();

// Whether this process has loaded NCCL (tests: a CPU run never does).
bool nccl_loaded();

}  // namespace zerotrain::comm
