// GEMM through oneDNN: C = alpha * op(A) · op(B) + bias + beta * C, fp32, or
// bf16 A and B with fp32 accumulation and an fp32 (or rounded bf16) output. Row-major operands,
// dense or with leading dimensions (column blocks of wider matrices). Large fp32 products with no
// transposed B and no bias go to dnnl_sgemm, where it is measured faster than the matmul primitive
// (matmul.cc says which); every other one runs a matmul primitive. oneDNN primitives are created
// once per distinct MatmulDesc and cached for the life of the process (creation costs milliseconds,
// execution of small shapes microseconds); one oneDNN engine and stream per process.
//
//   // out[BT,OC] = inp[BT,C] · weight[OC,C]ᵀ + bias[OC]
//   MatmulDesc d{.m = BT, .n = OC, .k = C, .trans_b = true};
//   ZT_RETURN_IF_ERROR(matmul(d, inp, weight, bias, out));
//   // dweight[OC,C] += dout[BT,OC]ᵀ · inp[BT,C]
//   MatmulDesc g{.m = OC, .n = C, .k = BT, .trans_a = true, .beta = 1.0f};
//   ZT_RETURN_IF_ERROR(matmul(g, dout, inp, nullptr, dweight));
//
// Threads: oneDNN's OpenMP pool, sized by OMP_NUM_THREADS. Called inside an
// OpenMP parallel region a GEMM runs on the calling thread alone (nested
// parallelism is off); attention relies on this to run one head a thread.
// Thread-safety: all functions may be called from any thread concurrently
// (the cache is locked; each call brings its own scratchpad).
#pragma once

#include <cstdint>
#include <string>

#include "core/half.h"
#include "core/status.h"
#include "device/cpu/convert.h"
#include "device/matmul_desc.h"

namespace zerotrain::device::cpu {

using device::MatmulDesc;  // device/matmul_desc.h

// Element type of A and B; C and the bias are always fp32.
enum class GemmInput { kF32, kBf16 };

// C = alpha·op(A)·op(B) + bias + beta·C with fp32 A, B. bias is [N] or nullptr.
// InvalidArgument for negative sizes, a leading dimension smaller than the
// stored row, or a null operand of nonzero size; Internal when oneDNN fails.
Status matmul(const MatmulDesc& desc, const float* a, const float* b, const float* bias, float* c);

// Same with bf16 A and B (raw bits), fp32 accumulation and fp32 C. Where the
// CPU has no bf16 GEMM, the inputs are widened to fp32 (exact) and the fp32
// path runs, so results agree either way up to accumulation order.
Status matmul_bf16(const MatmulDesc& desc, const BFloat16* a, const BFloat16* b, const float* bias,
                   float* c);

// Same with C in bf16 (raw bits): the fp32 accumulation plus bias, rounded
// to nearest even once, as the fp32-output form followed by
// bf16_from_float_array would give. C is overwritten: InvalidArgument for
// beta != 0, and for alpha != 1 with a bias. Half the bytes written, and
// no separate rounding pass, where the caller keeps only the rounded value.
Status matmul_bf16(const MatmulDesc& desc, const BFloat16* a, const BFloat16* b, const float* bias,
                   BFloat16* c);

// Name of the oneDNN implementation chosen for `desc` ("brg:avx512_core_amx",
// "gemm:jit", ...), creating and caching its primitive if needed; "fallback:fp32"
// when bf16 is widened; "sgemm:jit" for the fp32 shapes that run through
// dnnl_sgemm instead of a primitive (see matmul.cc). For tests and
// benchmarks ("ref" would mean slow).
StatusOr<std::string> matmul_impl_name(const MatmulDesc& desc, bool has_bias, GemmInput input);

// Number of cached primitives (grows by one per new distinct desc).
int64_t matmul_cache_size();

}  // namespace zerotrain::device::cpu
