// MatmulDesc GEMMs on cuBLASLt (cublaslt_gemm.h).
#include "device/cuda/cublaslt_gemm.h"

#include <cublasLt.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/log.h"
#include "device/cuda/cublaslt_api.h"
#include "device/cuda/cuda_status.h"
#include "device/cuda/kernels/kernels.h"

namespace zerotrain::device::cuda {
namespace {

// "only Hopper needs 32" MiB (llm.c's cublas_common.h).
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

// cuBLAS's status names (cublasGetStatusName is in libcublas, which the
// backend does not otherwise link).
const char* status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
    default:
      return "cublasStatus_t";
  }
}

Status lt_status(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return ok_status();
  const std::string m = std::string("cublasLt: ") + what + ": " + status_name(s) + " (" +
                        std::to_string(static_cast<int>(s)) + ")";
  return s == CUBLAS_STATUS_ALLOC_FAILED ? resource_exhausted(m) : internal_error(m);
}
#define ZT_LT(call) ZT_RETURN_IF_ERROR(lt_status((call), #call))

cudaDataType_t cuda_type(GemmType t) { return t == GemmType::kF32 ? CUDA_R_32F : CUDA_R_16BF; }

// The largest power of two up to 16 dividing the address: cuBLASLt's
// vectorised kernels need 16-byte operands, and the heuristic must know.
int alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  if (a == 0) return 16;
  int k = 16;
  while (a % k != 0) k /= 2;
  return k;
}

}  // namespace

struct LtGemm::Entry {
  const CublasLtApi* lt = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Entry() {
    if (op) lt->matmul_desc_destroy(op);
    for (auto l : {first, second, c})
      if (l) lt->layout_destroy(l);
  }
};

StatusOr<std::unique_ptr<LtGemm>> LtGemm::create() {
  std::unique_ptr<LtGemm> g(new LtGemm());
  ZT_ASSIGN_OR_RETURN(g->lt_, cublaslt_api());
  cublasLtHandle_t h = nullptr;
  ZT_LT(g->lt_->create(&h));
  g->handle_ = h;
  ZT_CUDA_RETURN_IF_ERROR(cudaMalloc(&g->workspace_, kWorkspaceBytes));
  g->workspace_bytes_ = kWorkspaceBytes;
  return g;
}

LtGemm::~LtGemm() {
  cache_.clear();
  if (workspace_ != nullptr) cudaFree(workspace_);
  if (handle_ != nullptr) lt_->destroy(static_cast<cublasLtHandle_t>(handle_));
}

StatusOr<LtGemm::Entry*> LtGemm::lookup(const GemmPlan& p, GemmType in, GemmType out, bool bias,
                                        bool beta_nonzero) {
  (void)beta_nonzero;
  const CublasLtApi* lt = lt_;
  auto e = std::make_unique<Entry>();
  e->lt = lt;
  ZT_LT(lt->matmul_desc_create(&e->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = p.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = p.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N;
  ZT_LT(lt->matmul_desc_set(e->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  ZT_LT(lt->matmul_desc_set(e->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  if (bias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    const cudaDataType_t bias_type = CUDA_R_32F;
    ZT_LT(lt->matmul_desc_set(e->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    ZT_LT(lt->matmul_desc_set(e->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                              sizeof bias_type));
  }
  const cudaDataType_t ti = cuda_type(in), to = cuda_type(out);
  ZT_LT(lt->layout_create(&e->first, ti, p.first_rows, p.first_cols, p.ld_first));
  ZT_LT(lt->layout_create(&e->second, ti, p.second_rows, p.second_cols, p.ld_second));
  ZT_LT(lt->layout_create(&e->c, to, p.c_rows, p.c_cols, p.ldc));
  if (p.batch > 1) {
    const int32_t count = static_cast<int32_t>(p.batch);
    const int64_t strides[3] = {p.stride_first, p.stride_second, p.stride_c};
    cublasLtMatrixLayout_t layouts[3] = {e->first, e->second, e->c};
    for (int i = 0; i < 3; ++i) {
      ZT_LT(lt->layout_set(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
      ZT_LT(lt->layout_set(layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i],
                           sizeof strides[i]));
    }
  }
  return e.release();
}

Status LtGemm::run(cudaStream_t stream, const MatmulDesc& desc, GemmType in, const void* a,
                   const void* b, const float* bias, GemmType out, void* c) {
  const CublasLtApi* lt = lt_;
  ZT_ASSIGN_OR_RETURN(GemmPlan p, plan_gemm(desc));
  if (p.m == 0 || p.n == 0) return ok_status();
  if ((c == nullptr) || (p.k > 0 && (a == nullptr || b == nullptr)))
    return invalid_argument("matmul: a null operand of nonzero size");
  if (p.k == 0) {
    // No product: C = beta·C + bias (cuBLASLt refuses k = 0).
    return kernels::gemm_without_product(stream, c, out == GemmType::kBf16, p.c_rows, p.c_cols,
                                         p.ldc, p.batch, p.beta, bias);
  }
  const int align =
      std::min({alignment(a), alignment(b), alignment(c), bias != nullptr ? alignment(bias) : 16});
  const Key key{p.m,
                p.n,
                p.k,
                p.trans_first,
                p.trans_second,
                p.ld_first,
                p.ld_second,
                p.ldc,
                p.batch,
                static_cast<int>(in) * 2 + static_cast<int>(out),
                align,
                bias != nullptr,
                p.beta != 0.0f};
  Entry* e = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      e = it->second.get();
    } else {
      ZT_ASSIGN_OR_RETURN(Entry * made, lookup(p, in, out, bias != nullptr, p.beta != 0.0f));
      std::unique_ptr<Entry> owned(made);
      cublasLtMatmulPreference_t pref = nullptr;
      ZT_LT(lt->preference_create(&pref));
      const uint32_t align_bytes = static_cast<uint32_t>(align);
      Status s = lt_status(lt->preference_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                              &workspace_bytes_, sizeof workspace_bytes_),
                           "workspace preference");
      for (auto attr :
           {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
        if (s.ok())
          s = lt_status(lt->preference_set(pref, attr, &align_bytes, sizeof align_bytes),
                        "alignment preference");
      }
      cublasLtMatmulHeuristicResult_t result{};
      int found = 0;
      if (s.ok())
        s = lt_status(lt->heuristic(static_cast<cublasLtHandle_t>(handle_), owned->op, owned->first,
                                    owned->second, owned->c, owned->c, pref, 1, &result, &found),
                      "heuristic");
      lt->preference_destroy(pref);
      ZT_RETURN_IF_ERROR(s);
      if (found == 0)
        return internal_error("cublasLt: no algorithm for the GEMM " + p.to_string() +
                              (bias != nullptr ? " with a bias epilogue" : ""));
      owned->algo = result.algo;
      e = owned.get();
      cache_.emplace(key, std::move(owned));
    }
  }
  if (bias != nullptr)
    ZT_LT(lt->matmul_desc_set(e->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  // Operand order swapped (gemm_plan.h): cuBLASLt's A is the desc's B.
  ZT_LT(lt->matmul(static_cast<cublasLtHandle_t>(handle_), e->op, &p.alpha, b, e->first, a,
                   e->second, &p.beta, c, e->c, c, e->c, &e->algo, workspace_, workspace_bytes_,
                   stream));
  return ok_status();
}

}  // namespace zerotrain::device::cuda
