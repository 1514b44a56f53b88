// cuBLASLt loaded on first use (cublaslt_api.h).
#include "device/cuda/cublaslt_api.h"

#include <atomic>
#include <mutex>
#include <string>

#include "core/shared_library.h"

namespace zerotrain::device::cuda {
namespace {

std::atomic<bool> g_loaded{false};

StatusOr<CublasLtApi> load(SharedLibrary* keep) {
  ZT_ASSIGN_OR_RETURN(
      SharedLibrary lib,
      SharedLibrary::open("libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR), "cuBLASLt"));
  CublasLtApi a;
  ZT_RETURN_IF_ERROR(lib.bind("cublasLtGetVersion", &a.get_version));
  ZT_RETURN_IF_ERROR(lib.bind("cublasLtCreate", &a.create));
  ZT_RETURN_IF_ERROR(lib.bind("cublasLtDestroy", &a.destroy));
  ZT_RETURN_IF_ERROR(lib.bind("cublasLtMatmulDescCreate", &a.matmul_desc_create));
  ZT_RETURN_IF_ERROR(lib.bind("cublasLtMatmulDescDestroy", &a.matmul_desc_destroy));
  ZT_RETURN_IF_ERROR(lib.bind("cublasLtMatmulDescSetAttribute", &a.matmul_desc_set));
  ZT_RETURN_IF_ERROR(lib.bind("cublasLtMatrixLayoutCreate", &a.layout_create));
  ZT_RETURN_IF_ERROR(lib.bind("cublasLtMatrixLayoutDestroy", &a.layout_destroy));
  ZT_RETURN_IF_ERROR(lib.bind("cublasLtMatrixLayoutSetAttribute", &a.layout_set));
  ZT_RETURN_IF_ERROR(lib.bind("cublasLtMatmulPreferenceCreate", &a.preference_create));
  ZT_RETURN_IF_ERROR(lib.bind("cublasLtMatmulPreferenceDestroy", &a.preference_destroy));
  ZT_RETURN_IF_ERROR(lib.bind("cublasLtMatmulPreferenceSetAttribute", &a.preference_set));
  ZT_RETURN_IF_ERROR(lib.bind("cublasLtMatmulAlgoGetHeuristic", &a.heuristic));
  ZT_RETURN_IF_ERROR(lib.bind("cublasLtMatmul", &a.matmul));
  *keep = std::move(lib);
  return a;
}

}  // namespace

StatusOr<const CublasLtApi*> cublaslt_api() {
  // Loaded once and never unloaded: handles outlive any one device.
  static SharedLibrary* library = new SharedLibrary();
  static const StatusOr<CublasLtApi>* api = [] {
    auto* a = new StatusOr<CublasLtApi>(load(library));
    g_loaded = a->ok();
    return a;
  }();
  if (!api->ok()) return api->status();
  return &api->value();
}

bool cublaslt_loaded() { return g_loaded.load(); }

}  // namespace zerotrain::device::cuda
