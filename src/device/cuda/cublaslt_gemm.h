// LtGemm: MatmulDesc GEMMs on cuBLASLt. Each distinct (plan, operand type,
// output type, bias) gets its matmul descriptor, layouts and the
// heuristic's first algorithm once, cached for the life of the device (as
// the CPU caches oneDNN primitives). fp32 GEMMs compute in fp32 (no TF32:
// the conformance tolerance is fp32's); bf16 operands accumulate in fp32.
// The bias rides the BIAS epilogue in fp32 (added before the single
// rounding of a bf16 output, as the CPU does).
//
//   ZT_ASSIGN_OR_RETURN(auto lt, LtGemm::create());
//   ZT_RETURN_IF_ERROR(lt->run(stream, desc, GemmType::kF32, a, b, bias, GemmType::kF32, c));
//
// Thread-safety: run() may be called from several threads (the cache is
// locked; the workspace belongs to the one compute stream it is used on).
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "core/status.h"
#include "device/cuda/gemm_plan.h"
#include "device/matmul_desc.h"

namespace zerotrain::device::cuda {

struct CublasLtApi;  // cublaslt_api.h

enum class GemmType { kF32, kBf16 };

class LtGemm {
 public:
  static StatusOr<std::unique_ptr<LtGemm>> create();
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // C = alpha·op(A)·op(B) + bias + beta·C (ops.h's matmul) with A and B of
  // `in`, C of `out`, on `stream`.
  Status run(cudaStream_t stream, const MatmulDesc& desc, GemmType in, const void* a, const void* b,
             const float* bias, GemmType out, void* c);

 private:
  struct Entry;
  using Key = std::tuple<int64_t, int64_t, int64_t, bool, bool, int64_t, int64_t, int64_t, int64_t,
                         int, int, bool, bool>;
  LtGemm() = default;
  StatusOr<Entry*> lookup(const GemmPlan& plan, GemmType in, GemmType out, bool bias,
                          bool beta_nonzero);

  const CublasLtApi* lt_ = nullptr;
  void* handle_ = nullptr;  // cublasLtHandle_t
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::mutex mu_;
  std::map<Key, std::unique_ptr<Entry>> cache_;
};

}  // namespace zerotrain::device::cuda
