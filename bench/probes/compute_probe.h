// Compute peak probes: register-blocked loops of independent accumulators
// that keep every FMA (or bf16 dot-product, or AMX tile) unit busy, so the
// measured FLOP/s is the ceiling the GEMM and MFU numbers are divided by.
//
//   fp32 FMA, AVX2:      12 ymm accumulators x = x*m + c   (192 FLOP an iteration)
//   fp32 FMA, AVX-512:   16 zmm accumulators               (512 FLOP)
//   bf16 dot, AVX512_BF16: 16 zmm vdpbf16ps, 32 bf16 pairs  (1024 FLOP)
//   bf16 AMX:            4 C tiles 16x16 fp32 += A(16x32) B(32x16) (65536 FLOP)
// An FMA counts 2 FLOP, a bf16 pair product-and-add 2 FLOP per element pair.
// Enough accumulators cover latency x issue width (4 cycles x 2 ports for
// FMA), so the loop is throughput-bound. Each kernel returns a checksum with
// a closed form (compute_checksum_expected), so a kernel that skipped work
// cannot report a peak.
//
//   ZT_ASSIGN_OR_RETURN(PeakResult r, measure_peak(ComputeIsa::kAvx512Fma, {.threads = 1}));
//   // r.gflops.best: GFLOP/s of one core
//
// Thread-safety: measure_peak runs its own OpenMP team; call it from one
// thread at a time. enable_amx() changes process state (a permission) once.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "probes/stats.h"

namespace zerotrain::bench {

enum class ComputeIsa { kAvx2Fma, kAvx512Fma, kAvx512Bf16, kAmxBf16 };

const char* isa_name(ComputeIsa isa);  // "avx2_fma", "avx512_fma", "avx512_bf16", "amx_bf16"

// FLOPs one iteration of the kernel performs (see the table above).
int64_t flops_per_iteration(ComputeIsa isa);

// OK if the CPU and OS can run `isa` in this process; Unavailable with the
// reason otherwise. For AMX this asks Linux for the tile-data permission
// (arch_prctl ARCH_REQ_XCOMP_PERM) the first time.
Status isa_usable(ComputeIsa isa);

// Kernel inputs. fp32 FMA: every lane runs x = x*mul + add from x = init.
// bf16: every accumulator lane starts at init and adds, per iteration and
// element pair, 1.0*b_even + 1.0*b_odd (AMX: 16 pairs per C element).
struct KernelParams {
  float init = 0.0f;
  float mul = 0.5f;
  float add = 1.0f;
  float b_even = 0.5f;
  float b_odd = 0.25f;
};

// Runs `iterations` of the kernel in the calling thread and returns the sum
// over all lanes of all accumulators. REQUIRES: isa_usable(isa).ok().
double run_compute_kernel(ComputeIsa isa, int64_t iterations, const KernelParams& params);

// What run_compute_kernel must return, from a scalar model of the same
// rounding steps (exact for the parameters used here).
double compute_checksum_expected(ComputeIsa isa, int64_t iterations, const KernelParams& params);

struct PeakOptions {
  int threads = 1;  // OpenMP threads, each running the kernel
  int repeats = 5;  // timed repeats; best/median/worst reported
  double seconds_per_repeat = 0.2;
};

struct PeakResult {
  ComputeIsa isa = ComputeIsa::kAvx2Fma;
  int threads = 1;
  int64_t iterations = 0;  // per thread per repeat
  // All threads together. gflops sums each thread's FLOPs over its own CPU
  // time (what the cores do while they run: the reference GEMM and MFU
  // divide by); gflops_wall divides by the team's wall time (lower whenever
  // another process took the core).
  Samples gflops;
  Samples gflops_wall;
};

// Calibrates the iteration count to seconds_per_repeat, checks the checksum
// of every repeat, and reports GFLOP/s by CPU time and by wall time. Unavailable when the ISA is
// not usable; Internal when a checksum is wrong.
StatusOr<PeakResult> measure_peak(ComputeIsa isa, const PeakOptions& options);

}  // namespace zerotrain::bench
