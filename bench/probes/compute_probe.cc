// Peak measurement around the kernels of compute_kernels_x86.cc: ISA checks,
// the AMX permission, the scalar checksum model, calibration and timing.
#include "probes/compute_probe.h"

#include <omp.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <vector>

#include "probes/compute_kernels.h"
#include "probes/cpu_info.h"

namespace zerotrain::bench {
namespace {

constexpr int kArchGetXcompPerm = 0x1022;  // asm/prctl.h, Linux >= 5.16
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

// Linux keeps AMX tile data off until the process asks (XFD); ask once.
Status request_amx_permission() {
  static const Status status = []() -> Status {
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
      return unavailable(std::string("AMX: arch_prctl(ARCH_REQ_XCOMP_PERM) refused: ") +
                         std::strerror(errno));
    }
    uint64_t mask = 0;
    if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &mask) != 0 ||
        !(mask & (uint64_t{1} << kXfeatureXtiledata))) {
      return unavailable("AMX: tile data permission not granted");
    }
    return ok_status();
  }();
  return status;
}

struct Shape {
  int accumulators, lanes;
};
Shape shape(ComputeIsa isa) {
  switch (isa) {
    case ComputeIsa::kAvx2Fma:
      return {12, 8};
    case ComputeIsa::kAvx512Fma:
      return {16, 16};
    case ComputeIsa::kAvx512Bf16:
      return {16, 16};
    case ComputeIsa::kAmxBf16:
      return {4, 256};
  }
  return {0, 0};
}

// Parameters that keep every accumulator at a fixed point (FMA: x -> 2) or
// exactly constant (bf16: +0.5 - 0.5), so long runs stay normal and exact.
KernelParams timing_params(ComputeIsa isa) {
  if (isa == ComputeIsa::kAvx2Fma || isa == ComputeIsa::kAvx512Fma) return {};
  return {.init = 1.0f, .b_even = 0.5f, .b_odd = -0.5f};
}

// Thread CPU seconds: excludes time this thread was preempted (the machine
// is shared), so flops / cpu time is what the core does when it runs.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Runs the kernel on `threads` threads; returns wall seconds of the team and
// fills each thread's checksum and CPU seconds.
double run_team(ComputeIsa isa, int threads, int64_t iterations, const KernelParams& params,
                std::vector<double>& checksums, std::vector<double>& cpu_seconds) {
  checksums.assign(threads, 0.0);
  cpu_seconds.assign(threads, 0.0);
  double t0 = 0, t1 = 0;
#pragma omp parallel num_threads(threads)
  {
#pragma omp barrier
#pragma omp master
    t0 = now_seconds();
    const double c0 = thread_cpu_seconds();
    checksums[omp_get_thread_num()] = run_compute_kernel(isa, iterations, params);
    cpu_seconds[omp_get_thread_num()] = thread_cpu_seconds() - c0;
#pragma omp barrier
#pragma omp master
    t1 = now_seconds();
  }
  return t1 - t0;
}

}  // namespace

const char* isa_name(ComputeIsa isa) {
  switch (isa) {
    case ComputeIsa::kAvx2Fma:
      return "avx2_fma";
    case ComputeIsa::kAvx512Fma:
      return "avx512_fma";
    case ComputeIsa::kAvx512Bf16:
      return "avx512_bf16";
    case ComputeIsa::kAmxBf16:
      return "amx_bf16";
  }
  return "?";
}

int64_t flops_per_iteration(ComputeIsa isa) {
  const Shape s = shape(isa);
  switch (isa) {
    case ComputeIsa::kAvx2Fma:
    case ComputeIsa::kAvx512Fma:
      return 2LL * s.accumulators * s.lanes;  // FMA = 2 FLOP
    case ComputeIsa::kAvx512Bf16:
      return 4LL * s.accumulators * s.lanes;  // 2 pairs a lane
    case ComputeIsa::kAmxBf16:
      return 2LL * s.accumulators * s.lanes * 32;  // K = 32 a tile op
  }
  return 0;
}

Status isa_usable(ComputeIsa isa) {
  const CpuInfo& cpu = detect_cpu();
  switch (isa) {
    case ComputeIsa::kAvx2Fma:
      return cpu.avx2_fma ? ok_status() : unavailable("AVX2/FMA not available");
    case ComputeIsa::kAvx512Fma:
      return cpu.avx512f ? ok_status() : unavailable("AVX-512F not available");
    case ComputeIsa::kAvx512Bf16:
      return cpu.avx512_bf16 ? ok_status() : unavailable("AVX512_BF16 not available");
    case ComputeIsa::kAmxBf16:
      if (!cpu.amx_bf16) return unavailable("AMX-BF16 not in CPUID");
      return request_amx_permission();
  }
  return internal_error("unknown ISA");
}

double run_compute_kernel(ComputeIsa isa, int64_t iterations, const KernelParams& params) {
  switch (isa) {
    case ComputeIsa::kAvx2Fma:
      return detail::fma_avx2(iterations, params);
    case ComputeIsa::kAvx512Fma:
      return detail::fma_avx512(iterations, params);
    case ComputeIsa::kAvx512Bf16:
      return detail::dot_avx512_bf16(iterations, params);
    case ComputeIsa::kAmxBf16:
      return detail::dot_amx_bf16(iterations, params);
  }
  return NAN;
}

double compute_checksum_expected(ComputeIsa isa, int64_t iterations, const KernelParams& p) {
  const Shape s = shape(isa);
  double sum = 0;
  for (int j = 0; j < s.accumulators; ++j) {
    float x = p.init + static_cast<float>(j);
    for (int64_t i = 0; i < iterations; ++i) {
      const float before = x;
      if (isa == ComputeIsa::kAvx2Fma || isa == ComputeIsa::kAvx512Fma) {
        x = std::fma(x, p.mul, p.add);
      } else if (isa == ComputeIsa::kAvx512Bf16) {
        x = (x + p.b_odd) + p.b_even;  // vdpbf16ps adds the odd product first
      } else {
        x += 16.0f * (p.b_even + p.b_odd);  // 16 pairs; exact for the values used
      }
      if (x == before) break;  // fixed point: further iterations change nothing
    }
    sum += static_cast<double>(x) * s.lanes;
  }
  return sum;
}

StatusOr<PeakResult> measure_peak(ComputeIsa isa, const PeakOptions& options) {
  ZT_RETURN_IF_ERROR(isa_usable(isa));
  if (options.threads < 1 || options.repeats < 1 || options.seconds_per_repeat <= 0) {
    return invalid_argument("measure_peak: threads, repeats and seconds_per_repeat must be > 0");
  }
  const KernelParams params = timing_params(isa);
  std::vector<double> checksums, cpu;
  // Calibrate on the whole team: double until a run takes >= 20 ms.
  int64_t iterations = 1 << 10;
  double seconds = 0;
  while ((seconds = run_team(isa, options.threads, iterations, params, checksums, cpu)) < 0.02) {
    iterations *= 2;
  }
  iterations = std::max<int64_t>(1, iterations * (options.seconds_per_repeat / seconds));
  const double expected = compute_checksum_expected(isa, iterations, params);
  const double flops = static_cast<double>(flops_per_iteration(isa)) * iterations;
  std::vector<double> wall_rates, cpu_rates;
  for (int r = 0; r < options.repeats; ++r) {
    seconds = run_team(isa, options.threads, iterations, params, checksums, cpu);
    double cpu_rate = 0;
    for (int t = 0; t < options.threads; ++t) {
      if (checksums[t] != expected) {
        return internal_error(std::string(isa_name(isa)) + " checksum " +
                              std::to_string(checksums[t]) + " != expected " +
                              std::to_string(expected));
      }
      cpu_rate += flops / std::max(cpu[t], 1e-9) / 1e9;
    }
    wall_rates.push_back(flops * options.threads / seconds / 1e9);
    cpu_rates.push_back(cpu_rate);
  }
  PeakResult result;
  result.isa = isa;
  result.threads = options.threads;
  result.iterations = iterations;
  result.gflops = summarize(std::move(cpu_rates));
  result.gflops_wall = summarize(std::move(wall_rates));
  return result;
}

}  // namespace zerotrain::bench
