// Internal: the ISA-specific peak loops behind run_compute_kernel(). Each
// returns the sum over all lanes of all accumulators. REQUIRES: the CPU (and
// for AMX the OS permission) supports the ISA.
// Thread-safety: pure per call (AMX configures this thread's tiles and
// releases them before returning).
#pragma once

#include <cstdint>

#include "probes/compute_probe.h"

namespace zerotrain::bench::detail {

double fma_avx2(int64_t iterations, const KernelParams& p);
double fma_avx512(int64_t iterations, const KernelParams& p);
double dot_avx512_bf16(int64_t iterations, const KernelParams& p);
double dot_amx_bf16(int64_t iterations, const KernelParams& p);

}  // namespace zerotrain::bench::detail
