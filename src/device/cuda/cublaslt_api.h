// cuBLASLt's entry points, loaded on first use (core/shared_library.h):
// the binary does not link libcublasLt (541 MB), so a CPU run never maps
// it and a CUDA build starts where it is absent. Types and constants come
// from cublasLt.h; only the calls go through this table.
//
//   ZT_ASSIGN_OR_RETURN(const CublasLtApi* lt, cublaslt_api());
//   lt->matmul(handle, op, ...);
//
// Thread-safety: the table is built once (call_once) and read-only after.
#pragma once

#include <cublasLt.h>

#include "core/status.h"

namespace zerotrain::device::cuda {

struct CublasLtApi {
  decltype(&::cublasLtGetVersion) get_version = nullptr;
  decltype(&::cublasLtCreate) create = nullptr;
  decltype(&::cublasLtDestroy) destroy = nullptr;
  decltype(&::cublasLtMatmulDescCreate) matmul_desc_create = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) matmul_desc_destroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) matmul_desc_set = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) layout_set = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) preference_create = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) preference_destroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) preference_set = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&::cublasLtMatmul) matmul = nullptr;
};

// The loaded table (libcublasLt.so.<major of the headers>); Unavailable
// naming the library and the loader's reason, every call after a failure.
StatusOr<const CublasLtApi*> cublaslt_api();

// Whether this process has loaded cuBLASLt (tests: a CPU run never does).
bool cublaslt_loaded();

}  // namespace zerotrain::device::cuda
