// NCCL loaded on first use (nccl_api.h).
#include "comm/nccl/nccl_api.h"

#include <atomic>
#include <string>

#include "core/shared_library.h"

namespace zerotrain::comm {
namespace {

std::atomic<bool> g_loaded{false};

StatusOr<NcclApi> load(SharedLibrary* keep) {
  ZT_ASSIGN_OR_RETURN(SharedLibrary lib,
                      SharedLibrary::open("libnccl.so." + std::to_string(NCCL_MAJOR), "NCCL"));
  NcclApi a;
  ZT_RETURN_IF_ERROR(lib.bind("ncclGetVersion", &a.get_version));
  ZT_RETURN_IF_ERROR(lib.bind("ncclGetUniqueId", &a.get_unique_id));
  ZT_RETURN_IF_ERROR(lib.bind("ncclCommInitRankConfig", &a.comm_init_rank_config));
  ZT_RETURN_IF_ERROR(lib.bind("ncclCommGetAsyncError", &a.comm_get_async_error));
  ZT_RETURN_IF_ERROR(lib.bind("ncclCommFinalize", &a.comm_finalize));
  ZT_RETURN_IF_ERROR(lib.bind("ncclCommDestroy", &a.comm_destroy));
  ZT_RETURN_IF_ERROR(lib.bind("ncclCommAbort", &a.comm_abort));
  ZT_RETURN_IF_ERROR(lib.bind("ncclGetErrorString", &a.get_error_string));
  ZT_RETURN_IF_ERROR(lib.bind("ncclGetLastError", &a.get_last_error));
  ZT_RETURN_IF_ERROR(lib.bind("ncclAllReduce", &a.all_reduce));
  ZT_RETURN_IF_ERROR(lib.bind("ncclReduceScatter", &a.reduce_scatter));
  ZT_RETURN_IF_ERROR(lib.bind("ncclAllGather", &a.all_gather));
  ZT_RETURN_IF_ERROR(lib.bind("ncclBroadcast", &a.broadcast));
  *keep = std::move(lib);
  return a;
}

}  // namespace

StatusOr<const NcclApi*> nccl_api() {
  // Loaded once and never unloaded: communicators may outlive any caller.
  static SharedLibrary* library = new SharedLibrary();
  static const StatusOr<NcclApi>* api = [] {
    auto* a = new StatusOr<NcclApi>(load(library));
    g_loaded = a->ok();
    return a;
  }();
  if (!api->ok()) return api->status();
  return &api->value();
}

bool nccl_loaded() { return g_loaded.load(); }

}  // namespace zerotrain::comm
